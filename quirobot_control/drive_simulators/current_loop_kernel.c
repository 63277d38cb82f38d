/* The drive's sampled PI current loop over one physics step, compiled: the twin of
 * current_loop.py's `current_loop_samples`, built as the extension
 * quirobot_control.drive_simulators._current_loop_kernel when a C compiler and Python's headers
 * are there (setup.py, CMakeLists.txt).
 *
 * Same operations in the same order on IEEE doubles, so the results are bit for bit the Python
 * law's (test/control/drive_simulators/test_current_loop.py, test_drive_array.py): built with
 * -ffp-contract=off (no fused multiply-adds), exp() from the C library Python's math.exp calls.
 * Why C: the loop samples at 20 kHz, five samples per 0.25 ms physics step for each of six drives;
 * interpreted, that recurrence was the largest part of advance_drive's time (bench/sim_speed.py
 * measures `quirobot simulate` with either).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

#define ARGUMENTS 9
#define SATURATED_ARGUMENT 5
#define CONSTANTS 11

/* (constants, reference, speed, dt, integral, saturated, current, voltage, until_sample) ->
 * (integral, saturated, current, voltage, until_sample): current_loop_samples_in_python's. */
static PyObject *current_loop_samples(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != ARGUMENTS) {
        PyErr_Format(PyExc_TypeError, "current_loop_samples takes %d arguments, got %zd", ARGUMENTS, nargs);
        return NULL;
    }
    if (!PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != CONSTANTS) {
        PyErr_Format(PyExc_TypeError, "current_loop_samples: constants must be a tuple of %d floats", CONSTANTS);
        return NULL;
    }
    double c[CONSTANTS], value[ARGUMENTS];
    for (int i = 0; i < CONSTANTS; i++) {
        c[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(args[0], i));
        if (c[i] == -1.0 && PyErr_Occurred()) return NULL;
    }
    for (int i = 1; i < ARGUMENTS; i++) {
        if (i == SATURATED_ARGUMENT) continue;
        value[i] = PyFloat_AsDouble(args[i]);
        if (value[i] == -1.0 && PyErr_Occurred()) return NULL;
    }
    int saturated = PyObject_IsTrue(args[SATURATED_ARGUMENT]);
    if (saturated < 0) return NULL;
    const double R = c[0], L = c[1], K_V = c[2], limit = c[3], period = c[4], full_decay = c[5];
    const double kp = c[6], ki_period = c[7], voltage_limit = c[8], loop_resistance = c[9], back_emf = c[10];
    const double reference = value[1], speed = value[2];
    double remaining = value[3], integral = value[4], current = value[6], voltage = value[7];
    double until_sample = value[8];
    const double tolerance = 1e-9 * period;
    while (remaining > tolerance) {
        if (until_sample <= tolerance) {
            if (saturated) integral = loop_resistance * current; /* anti-windup by tracking */
            const double error = reference - current;
            const double unlimited = kp * error + integral + back_emf * speed;
            voltage = unlimited > voltage_limit ? voltage_limit : unlimited < -voltage_limit ? -voltage_limit : unlimited;
            saturated = voltage != unlimited;
            if (!saturated) integral += ki_period * error;
            until_sample = period;
        }
        const double step = remaining < until_sample ? remaining : until_sample;
        const double decay = step == period ? full_decay : exp(-step * R / L);
        const double steady = (voltage - K_V * speed) / R;
        current = steady + (current - steady) * decay;
        current = current > limit ? limit : current < -limit ? -limit : current;
        remaining -= step;
        until_sample -= step;
    }
    return Py_BuildValue("(dNddd)", integral, PyBool_FromLong(saturated), current, voltage, until_sample);
}

static PyMethodDef methods[] = {
    {"current_loop_samples", (PyCFunction)(void (*)(void))current_loop_samples, METH_FASTCALL,
     "current_loop.current_loop_samples, compiled (same arguments, same results bit for bit)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_current_loop_kernel",
    "The drive's current loop over one physics step, compiled (current_loop_kernel.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__current_loop_kernel(void) { return PyModule_Create(&module); }
