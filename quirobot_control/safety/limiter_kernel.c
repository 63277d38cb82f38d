/* The safety layer's command limiter, compiled: the twin of command_limiter.py's
 * `limit_commands_in_python`, built as the extension quirobot_control.safety._limiter_kernel when
 * a C compiler and Python's headers are there (setup.py, CMakeLists.txt). Beside it
 * `within_limits`: SafetyMonitor.check's comparisons, True where that check passes.
 *
 * Same operations in the same order on IEEE doubles, so the results are bit for bit the Python
 * law's (test/control/safety/test_command_limiter.py): built with -ffp-contract=off (no fused
 * multiply-adds). A request that passes unclipped is returned as the object it came in, as the
 * Python returns it. What the Python would treat otherwise (an item that is not a float, a
 * sequence that is not a list or tuple or is too short, a square root of a negative number,
 * which math.sqrt refuses) returns None before anything is changed, and the Python twin answers.
 * Why C: six joints of a dozen comparisons and two square roots at every 1 kHz cycle.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

#define SCALARS 6

/* Item j of a list or tuple (borrowed). */
static PyObject *item(PyObject *sequence, Py_ssize_t j) {
    return PyList_Check(sequence) ? PyList_GET_ITEM(sequence, j) : PyTuple_GET_ITEM(sequence, j);
}

/* A list or tuple of at least n exact floats. */
static int floats(PyObject *sequence, Py_ssize_t n) {
    if (!(PyList_CheckExact(sequence) || PyTuple_CheckExact(sequence)) || PySequence_Fast_GET_SIZE(sequence) < n)
        return 0;
    for (Py_ssize_t j = 0; j < n; j++) {
        if (!PyFloat_CheckExact(item(sequence, j))) return 0;
    }
    return 1;
}

/* The limiter's law for one joint; 0 where math.sqrt would refuse its argument. */
typedef struct {
    double step, requested, safe_position, v_up, v_down;
} Joint;

static int limit_joint(const double *s, double q_c, double v_c, double position, double velocity, double dt,
                       Joint *out) {
    const double soft_lower = s[0], soft_upper = s[1], v_max = s[2], k_position = s[3], a_brake = s[4], a_cmd = s[5];
    double v_down = -k_position * (q_c - soft_lower);
    v_down = v_max < v_down ? v_max : v_down;
    v_down = -v_max > v_down ? -v_max : v_down;
    double v_up = -k_position * (q_c - soft_upper);
    v_up = -v_max > v_up ? -v_max : v_up;
    v_up = v_max < v_up ? v_max : v_up;
    double room = soft_upper - q_c;
    double radicand = 2.0 * a_brake * (room < 0.0 ? 0.0 : room);
    if (radicand < 0.0) return 0;
    double brake = sqrt(radicand);
    v_up = brake < v_up ? brake : v_up;
    room = q_c - soft_lower;
    radicand = 2.0 * a_brake * (room < 0.0 ? 0.0 : room);
    if (radicand < 0.0) return 0;
    brake = -sqrt(radicand);
    v_down = brake > v_down ? brake : v_down;
    if (v_down > 0.0) {
        const double bound = (v_c < 0.0 ? 0.0 : v_c) + a_cmd * dt;
        v_down = bound < v_down ? bound : v_down;
    }
    if (v_up < 0.0) {
        const double bound = (v_c > 0.0 ? 0.0 : v_c) - a_cmd * dt;
        v_up = bound > v_up ? bound : v_up;
    }
    const double slack = 1e-9 * v_max;
    v_up += slack;
    v_down -= slack;
    const double requested = (position - q_c) / dt;
    radicand = 2.0 * a_cmd * fabs(position - q_c);
    if (radicand < 0.0) return 0;
    const double approach = fabs(velocity) + sqrt(radicand) + slack;
    double step = -approach > requested ? -approach : requested;
    step = approach < step ? approach : step;
    const double low = v_c - a_cmd * dt, high = v_c + a_cmd * dt;
    step = low > step ? low : step;
    step = high < step ? high : step;
    step = v_down > step ? v_down : step;
    step = v_up < step ? v_up : step;
    out->step = step;
    out->requested = requested;
    out->safe_position = q_c + step * dt;
    out->v_up = v_up;
    out->v_down = v_down;
    return 1;
}

/* (scalars, previous, step_velocity, position, velocity, dt) -> (safe_position, safe_velocity)
 * as limit_commands_in_python's, step_velocity updated in place; or None (the module doc). */
static PyObject *limit_commands(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "limit_commands takes 6 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *scalars = args[0], *previous = args[1], *step_velocity = args[2], *position = args[3],
             *velocity = args[4];
    if (!PyList_CheckExact(scalars) && !PyTuple_CheckExact(scalars)) Py_RETURN_NONE;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(scalars);
    if (!PyFloat_CheckExact(args[5]) || !PyList_CheckExact(step_velocity) || !floats(step_velocity, n) ||
        !floats(previous, n) || !floats(position, n) || !floats(velocity, n))
        Py_RETURN_NONE;
    const double dt = PyFloat_AS_DOUBLE(args[5]);
    /* Every joint computed before anything is written: a refusal leaves no trace. */
    Joint stack_joints[8];
    Joint *joints = n <= 8 ? stack_joints : PyMem_Malloc(sizeof(Joint) * (size_t)(n > 0 ? n : 1));
    if (joints == NULL) return PyErr_NoMemory();
    PyObject *result = NULL, *safe_position = NULL, *safe_velocity = NULL;
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *constants = item(scalars, j);
        double s[SCALARS];
        if (!PyTuple_CheckExact(constants) || PyTuple_GET_SIZE(constants) != SCALARS) goto fallback;
        for (int k = 0; k < SCALARS; k++) {
            PyObject *value = PyTuple_GET_ITEM(constants, k);
            if (!PyFloat_CheckExact(value)) goto fallback;
            s[k] = PyFloat_AS_DOUBLE(value);
        }
        if (!limit_joint(s, PyFloat_AS_DOUBLE(item(previous, j)), PyFloat_AS_DOUBLE(item(step_velocity, j)),
                         PyFloat_AS_DOUBLE(item(position, j)), PyFloat_AS_DOUBLE(item(velocity, j)), dt, &joints[j]))
            goto fallback;
    }
    safe_position = PyList_New(n);
    safe_velocity = PyList_New(n);
    if (safe_position == NULL || safe_velocity == NULL) goto done;
    for (Py_ssize_t j = 0; j < n; j++) {
        const Joint *joint = &joints[j];
        PyObject *asked = item(position, j), *speed = item(velocity, j), *safe, *command;
        const int unclipped = joint->step == joint->requested;
        if (unclipped) {
            safe = asked;
            Py_INCREF(safe);
            const double wanted = PyFloat_AS_DOUBLE(speed);
            if (joint->v_down > wanted) {
                command = PyFloat_FromDouble(joint->v_up < joint->v_down ? joint->v_up : joint->v_down);
            } else if (joint->v_up < wanted) {
                command = PyFloat_FromDouble(joint->v_up);
            } else {
                command = speed;
                Py_INCREF(command);
            }
        } else {
            safe = PyFloat_FromDouble(joint->safe_position);
            command = PyFloat_FromDouble(joint->step);
        }
        PyObject *step = PyFloat_FromDouble(joint->step);
        if (safe == NULL || command == NULL || step == NULL) {
            Py_XDECREF(safe);
            Py_XDECREF(command);
            Py_XDECREF(step);
            goto done;
        }
        PyList_SET_ITEM(safe_position, j, safe);
        PyList_SET_ITEM(safe_velocity, j, command);
        PyList_SetItem(step_velocity, j, step); /* steals step, releases the old value */
    }
    result = PyTuple_Pack(2, safe_position, safe_velocity);
    goto done;
fallback:
    result = Py_None;
    Py_INCREF(result);
done:
    Py_XDECREF(safe_position);
    Py_XDECREF(safe_velocity);
    if (joints != stack_joints) PyMem_Free(joints);
    return result;
}

/* (scalars, following, start_excess, overspeed_ratio, command, measured, measured_velocity) ->
 * True where SafetyMonitor.check would pass (every measured position finite and within its soft
 * range widened by the following error and the start excess, every measured speed finite and
 * within overspeed_ratio times v_max when given, every following error within its limit), the
 * same comparisons on the same doubles; None otherwise, or for anything but floats in lists or
 * tuples: check's own loop then raises naming the joint (or passes). */
static PyObject *within_limits(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 7) {
        PyErr_Format(PyExc_TypeError, "within_limits takes 7 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *scalars = args[0], *following = args[1], *start_excess = args[2], *command = args[4],
             *measured = args[5], *velocity = args[6];
    if (!PyList_CheckExact(scalars) && !PyTuple_CheckExact(scalars)) Py_RETURN_NONE;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(scalars);
    const int velocities = velocity != Py_None;
    if (!PyFloat_CheckExact(args[3]) || !floats(following, n) || PySequence_Fast_GET_SIZE(following) != n ||
        !floats(start_excess, n) || !floats(command, n) || !floats(measured, n) ||
        (velocities && !floats(velocity, n)))
        Py_RETURN_NONE;
    const double ratio = PyFloat_AS_DOUBLE(args[3]);
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *constants = item(scalars, j);
        if (!PyTuple_CheckExact(constants) || PyTuple_GET_SIZE(constants) != SCALARS) Py_RETURN_NONE;
        PyObject *lower_value = PyTuple_GET_ITEM(constants, 0), *upper_value = PyTuple_GET_ITEM(constants, 1),
                 *v_max_value = PyTuple_GET_ITEM(constants, 2);
        if (!PyFloat_CheckExact(lower_value) || !PyFloat_CheckExact(upper_value) || !PyFloat_CheckExact(v_max_value))
            Py_RETURN_NONE;
        const double q = PyFloat_AS_DOUBLE(item(measured, j));
        if (!isfinite(q)) Py_RETURN_NONE;
        const double allowance = PyFloat_AS_DOUBLE(item(following, j)) + PyFloat_AS_DOUBLE(item(start_excess, j));
        if (q < PyFloat_AS_DOUBLE(lower_value) - allowance || q > PyFloat_AS_DOUBLE(upper_value) + allowance)
            Py_RETURN_NONE;
        if (velocities) {
            const double v = PyFloat_AS_DOUBLE(item(velocity, j));
            if (!isfinite(v) || fabs(v) > ratio * PyFloat_AS_DOUBLE(v_max_value)) Py_RETURN_NONE;
        }
    }
    for (Py_ssize_t j = 0; j < n; j++) {
        const double error = fabs(PyFloat_AS_DOUBLE(item(command, j)) - PyFloat_AS_DOUBLE(item(measured, j)));
        if (error > PyFloat_AS_DOUBLE(item(following, j))) Py_RETURN_NONE;
    }
    Py_RETURN_TRUE;
}

static PyMethodDef methods[] = {
    {"limit_commands", (PyCFunction)(void (*)(void))limit_commands, METH_FASTCALL,
     "command_limiter.limit_commands_in_python, compiled (the same results bit for bit), or None where the "
     "Python twin must answer."},
    {"within_limits", (PyCFunction)(void (*)(void))within_limits, METH_FASTCALL,
     "True where SafetyMonitor.check would pass (the same comparisons), None where its loop must answer."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_limiter_kernel",
    "The safety layer's command limiter and state check, compiled (limiter_kernel.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__limiter_kernel(void) { return PyModule_Create(&module); }
