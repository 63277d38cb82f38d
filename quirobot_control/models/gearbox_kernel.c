/* A wrist joint's motor side through its gearbox over one physics step, compiled: the twin of
 * wrist_gearbox.py's `wrist_motor_substeps_in_python`, built as the extension
 * quirobot_control.models._gearbox_kernel when a C compiler and Python's headers are there
 * (setup.py, CMakeLists.txt).
 *
 * Same operations in the same order on IEEE doubles, so the results are bit for bit the Python
 * law's (test/control/models/test_wrist_gearbox.py): built with -ffp-contract=off (no fused
 * multiply-adds). Why C: both wrist joints take four motor sub-steps at every physics step of
 * the realistic plant, a fifth of an accuracy sample's plant time interpreted.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

#define ARGUMENTS 8
#define CONSTANTS 6

/* wrist_gearbox.gear_torque. */
static double gear_torque(double stiffness, double half_play, double damping, double twist, double slip) {
    double windup;
    if (twist > half_play) {
        windup = twist - half_play;
    } else if (twist < -half_play) {
        windup = twist + half_play;
    } else {
        return 0.0;
    }
    return stiffness * windup + damping * slip;
}

/* (constants, substeps, effort, coulomb, load_angle, load_speed, angle, speed) ->
 * (angle, speed, mean torque): wrist_motor_substeps_in_python's. */
static PyObject *wrist_motor_substeps(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != ARGUMENTS) {
        PyErr_Format(PyExc_TypeError, "wrist_motor_substeps takes %d arguments, got %zd", ARGUMENTS, nargs);
        return NULL;
    }
    if (!PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != CONSTANTS) {
        PyErr_Format(PyExc_TypeError, "wrist_motor_substeps: constants must be a tuple of %d floats", CONSTANTS);
        return NULL;
    }
    double c[CONSTANTS], value[ARGUMENTS];
    for (int i = 0; i < CONSTANTS; i++) {
        c[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(args[0], i));
        if (c[i] == -1.0 && PyErr_Occurred()) return NULL;
    }
    const long substeps = PyLong_AsLong(args[1]);
    if (substeps == -1 && PyErr_Occurred()) return NULL;
    if (substeps < 1) {
        PyErr_Format(PyExc_ValueError, "wrist_motor_substeps: substeps must be >= 1, got %ld", substeps);
        return NULL;
    }
    for (int i = 2; i < ARGUMENTS; i++) {
        value[i] = PyFloat_AsDouble(args[i]);
        if (value[i] == -1.0 && PyErr_Occurred()) return NULL;
    }
    const double J = c[0], dt = c[1], viscous = c[2], stiffness = c[3], half_play = c[4], damping = c[5];
    const double effort = value[2], coulomb = value[3], load_angle = value[4], load_speed = value[5];
    double angle = value[6], speed = value[7], total = 0.0;
    for (long step = 0; step < substeps; step++) {
        const double transmitted = gear_torque(stiffness, half_play, damping, angle - load_angle, speed - load_speed);
        total += transmitted;
        const double net = effort - transmitted - viscous * speed;
        double new_speed;
        if (speed == 0.0 && fabs(net) <= coulomb) {
            new_speed = 0.0; /* stuck: dry friction holds */
        } else {
            const double direction = speed != 0.0 ? copysign(1.0, speed) : copysign(1.0, net);
            new_speed = speed + dt * (net - coulomb * direction) / J;
            if (speed != 0.0 && new_speed * speed < 0.0) new_speed = 0.0; /* stops it, never reverses it */
        }
        speed = new_speed;
        angle += dt * new_speed;
    }
    return Py_BuildValue("(ddd)", angle, speed, total / (double)substeps);
}

static PyMethodDef methods[] = {
    {"wrist_motor_substeps", (PyCFunction)(void (*)(void))wrist_motor_substeps, METH_FASTCALL,
     "wrist_gearbox.wrist_motor_substeps, compiled (same arguments, same results bit for bit)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_gearbox_kernel",
    "The realistic plant's wrist motor side over one physics step, compiled (gearbox_kernel.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__gearbox_kernel(void) { return PyModule_Create(&module); }
