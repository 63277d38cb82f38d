/* The simulated drives' physics step, compiled: the twins of current_loop.py's
 * `current_loop_samples` (the sampled PI current loop over one step) and of drive_array.py's
 * `advance_drives_in_python` (every drive of a plant over one step: simulated_drive.advance_drive),
 * built as the extension quirobot_control.drive_simulators._drive_kernel when a C compiler and
 * Python's headers are there (setup.py, CMakeLists.txt).
 *
 * Same operations in the same order on IEEE doubles, so the results are bit for bit the Python
 * law's (test/control/drive_simulators/test_current_loop.py and test_drive_kernel.py,
 * test/control/simulation/test_drive_array.py): built with -ffp-contract=off (no fused multiply-adds), exp() from the C
 * library Python's math.exp calls. Why C: the loop samples at 20 kHz, five samples per 0.25 ms
 * physics step for each of six drives, and the step of the six drives runs four times a control
 * period; interpreted, they were the largest part of a simulation's time (bench/sim_speed.py
 * measures `quirobot simulate` with the Python twins too).
 *
 * advance_drives keeps the drives' state where the Python law keeps it, in the attributes of the
 * SimulatedDrive, its DriveController, its CurrentLoop and its PID: those classes declare
 * __slots__, and `bind` finds each slot's offset once, so the C reads and writes them where they
 * are and every method sees the state it always saw. It runs the common case itself: the drive
 * sampling its encoder, its velocity estimate, its controller between two position-loop samples
 * (or passing the host's current in CST) and a CSP drive's position-loop sample (the PID), its
 * current loop. For anything else it calls the Python code at the same point, before it has
 * changed anything that code reads: the whole advance_drive (bound as the fallback) for a
 * non-finite input, an overspeed (which faults the drive) or a drive of another class, the
 * controller's own step_values when its watchdog is due or it samples for a stop or homing, and
 * the drive's own methods for a self-stop latch or a switch-off.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <structmember.h>

#define ARGUMENTS 9
#define SATURATED_ARGUMENT 5
#define CONSTANTS 11
#define DRIVE_CONSTANTS 6

/* The current loop over `dt` s from its state (integral V, saturated, current A, voltage V,
 * s until the next sample), updated in place: current_loop_samples_in_python's law. c: the
 * constants tuple's 11 values (R, L, K_V, current limit, period, full decay, kp, ki*period,
 * voltage limit, loop resistance, back-EMF constant). */
static void current_loop(const double *c, double reference, double speed, double dt, double *integral,
                         int *saturated, double *current, double *voltage, double *until_sample) {
    const double R = c[0], L = c[1], K_V = c[2], limit = c[3], period = c[4], full_decay = c[5];
    const double kp = c[6], ki_period = c[7], voltage_limit = c[8], loop_resistance = c[9], back_emf = c[10];
    const double tolerance = 1e-9 * period;
    double remaining = dt;
    while (remaining > tolerance) {
        if (*until_sample <= tolerance) {
            if (*saturated) *integral = loop_resistance * *current; /* anti-windup by tracking */
            const double error = reference - *current;
            const double unlimited = kp * error + *integral + back_emf * speed;
            *voltage = unlimited > voltage_limit ? voltage_limit : unlimited < -voltage_limit ? -voltage_limit : unlimited;
            *saturated = *voltage != unlimited;
            if (!*saturated) *integral += ki_period * error;
            *until_sample = period;
        }
        const double step = remaining < *until_sample ? remaining : *until_sample;
        const double decay = step == period ? full_decay : exp(-step * R / L);
        const double steady = (*voltage - K_V * speed) / R;
        *current = steady + (*current - steady) * decay;
        *current = *current > limit ? limit : *current < -limit ? -limit : *current;
        remaining -= step;
        *until_sample -= step;
    }
}

/* A tuple of `count` floats into `out`; TypeError naming `what` otherwise. */
static int tuple_doubles(PyObject *tuple, Py_ssize_t count, double *out, const char *what) {
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != count) {
        PyErr_Format(PyExc_TypeError, "%s must be a tuple of %zd floats", what, count);
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        out[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(tuple, i));
        if (out[i] == -1.0 && PyErr_Occurred()) return -1;
    }
    return 0;
}

/* (constants, reference, speed, dt, integral, saturated, current, voltage, until_sample) ->
 * (integral, saturated, current, voltage, until_sample): current_loop_samples_in_python's. */
static PyObject *current_loop_samples(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != ARGUMENTS) {
        PyErr_Format(PyExc_TypeError, "current_loop_samples takes %d arguments, got %zd", ARGUMENTS, nargs);
        return NULL;
    }
    double c[CONSTANTS], value[ARGUMENTS];
    if (tuple_doubles(args[0], CONSTANTS, c, "current_loop_samples: constants") < 0) return NULL;
    for (int i = 1; i < ARGUMENTS; i++) {
        if (i == SATURATED_ARGUMENT) continue;
        value[i] = PyFloat_AsDouble(args[i]);
        if (value[i] == -1.0 && PyErr_Occurred()) return NULL;
    }
    int saturated = PyObject_IsTrue(args[SATURATED_ARGUMENT]);
    if (saturated < 0) return NULL;
    double integral = value[4], current = value[6], voltage = value[7], until_sample = value[8];
    current_loop(c, value[1], value[2], value[3], &integral, &saturated, &current, &voltage, &until_sample);
    return Py_BuildValue("(dNddd)", integral, PyBool_FromLong(saturated), current, voltage, until_sample);
}

/* --- advance_drives ----------------------------------------------------------------------------- */

/* The state advance_drives reads and writes: slots (__slots__) of SimulatedDrive, its
 * DriveController, its CurrentLoop and its PID, found by name once (`bind`) and read at their
 * offsets. */
enum {
    D_CONSTANTS, D_LOOP_CONSTANTS, D_STATE, D_FAULT, D_JOINT_POSITION, D_RAW_ORIGIN, D_VELOCITY_ANCHOR,
    D_VELOCITY_ELAPSED, D_PREVIOUS_DT, D_VELOCITY, D_POSITION, D_CONTROL, D_REFERENCE, D_LOOP, D_CURRENT,
    D_VOLTAGE, D_UNTIL_SAMPLE, DRIVE_FIELDS
};
static const char *const DRIVE_NAMES[DRIVE_FIELDS] = {
    "_constants", "_current_loop_constants", "_state", "_fault", "_joint_position", "_raw_origin",
    "_velocity_anchor", "_velocity_elapsed", "_previous_dt", "_velocity", "_position", "control",
    "_reference", "loop", "_current", "_voltage", "_until_sample",
};
enum {
    C_SETTINGS, C_POWER, C_STOPPING, C_HALTED, C_SINCE_COMMAND, C_MODE, C_CURRENT_COMMAND, C_UNTIL_SAMPLE,
    C_PERIOD, C_OUTPUT, C_BRAKE, C_BRAKE_TIME, C_LAST_POSITION, C_LAST_VELOCITY, C_FAULT, C_TARGET,
    C_FRESH_TARGET, C_REFERENCE_POSITION, C_REFERENCE_VELOCITY, C_PID, CONTROL_FIELDS
};
static const char *const CONTROL_NAMES[CONTROL_FIELDS] = {
    "settings", "power", "stopping", "halted", "since_command", "mode", "_current_command",
    "_until_sample", "period", "_output", "brake", "brake_time", "_last_position", "_last_velocity", "fault",
    "_target", "_fresh_target", "_reference_position", "_reference_velocity", "pid",
};
enum { L_INTEGRAL, L_SATURATED, LOOP_FIELDS };
static const char *const LOOP_NAMES[LOOP_FIELDS] = {"integral", "saturated"};
enum {
    P_GAINS, P_DT, P_ALPHA, P_INTEGRAL, P_VELOCITY, P_REFERENCE_VELOCITY, P_LAST_POSITION,
    P_LAST_SETPOINT_VELOCITY, P_OUTPUT, P_SATURATED, PID_FIELDS
};
static const char *const PID_NAMES[PID_FIELDS] = {
    "gains", "dt", "_alpha", "integral", "velocity", "reference_velocity", "_last_position",
    "_last_setpoint_velocity", "output", "saturated",
};

#define MAX_FIELDS ((int)CONTROL_FIELDS > (int)DRIVE_FIELDS ? (int)CONTROL_FIELDS : (int)DRIVE_FIELDS)
typedef struct {
    PyTypeObject *type; /* NULL until bound */
    Py_ssize_t offset[MAX_FIELDS];
} Layout;
static Layout drive_layout, control_layout, loop_layout, pid_layout;
/* The enum members the law compares with; the names of the methods and attributes it calls. */
static PyObject *FALLBACK; /* simulated_drive.advance_drive: the whole step in Python */
static PyObject *ENABLED, *FAULT, *CST, *CSP, *QUICK_STOP_REQUEST, *STEP_VALUES, *NEXT_STATE, *SWITCH_OFF,
    *MASTER_TIMEOUT, *MAX_CURRENT, *HOMING, *DIRECTION, *SWITCH_POSITION, *KP, *KI, *KD, *OUTPUT_LIMIT,
    *BRAKE_ENGAGE_TIME, *BRAKE_HOLDING, *CONTROL_NAME;

#define SLOT(object, layout, field) (*(PyObject **)((char *)(object) + (layout).offset[field]))

/* The offsets of `names` in `type`'s __slots__; TypeError naming a name that is no slot. */
static int bind_layout(Layout *layout, PyObject *type, const char *const *names, int count) {
    if (count > MAX_FIELDS) {
        PyErr_SetString(PyExc_SystemError, "bind: more fields than a Layout holds (MAX_FIELDS)");
        return -1;
    }
    if (!PyType_Check(type)) {
        PyErr_SetString(PyExc_TypeError, "bind: expected a class");
        return -1;
    }
    for (int i = 0; i < count; i++) {
        PyObject *descriptor = PyObject_GetAttrString(type, names[i]);
        if (descriptor == NULL) return -1;
        int slot = Py_IS_TYPE(descriptor, &PyMemberDescr_Type) &&
                   ((PyMemberDescrObject *)descriptor)->d_member->type == T_OBJECT_EX;
        if (slot) layout->offset[i] = ((PyMemberDescrObject *)descriptor)->d_member->offset;
        Py_DECREF(descriptor);
        if (!slot) {
            PyErr_Format(PyExc_TypeError, "bind: %s.%s is not a slot (__slots__)", ((PyTypeObject *)type)->tp_name, names[i]);
            return -1;
        }
    }
    Py_INCREF(type);
    Py_XDECREF(layout->type);
    layout->type = (PyTypeObject *)type;
    return 0;
}

static int keep(PyObject **target, PyObject *value) {
    if (value == NULL) return -1;
    Py_XSETREF(*target, value);
    return 0;
}

/* bind(SimulatedDrive, DriveController, CurrentLoop, PID, DriveState.ENABLED, DriveState.FAULT,
 * DriveMode.CST, DriveMode.CSP, advance_drive): what advance_drives works on, and the Python step
 * it leaves the rest to (drive_array binds them at import). */
static PyObject *bind(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 9) {
        PyErr_Format(PyExc_TypeError, "bind takes 9 arguments, got %zd", nargs);
        return NULL;
    }
    if (!PyCallable_Check(args[8])) {
        PyErr_SetString(PyExc_TypeError, "bind: the fallback (advance_drive) must be callable");
        return NULL;
    }
    if (bind_layout(&drive_layout, args[0], DRIVE_NAMES, DRIVE_FIELDS) < 0 ||
        bind_layout(&control_layout, args[1], CONTROL_NAMES, CONTROL_FIELDS) < 0 ||
        bind_layout(&loop_layout, args[2], LOOP_NAMES, LOOP_FIELDS) < 0 ||
        bind_layout(&pid_layout, args[3], PID_NAMES, PID_FIELDS) < 0) {
        return NULL;
    }
    for (int i = 4; i < 9; i++) Py_INCREF(args[i]);
    Py_XSETREF(ENABLED, args[4]);
    Py_XSETREF(FAULT, args[5]);
    Py_XSETREF(CST, args[6]);
    Py_XSETREF(CSP, args[7]);
    Py_XSETREF(FALLBACK, args[8]);
    if (keep(&QUICK_STOP_REQUEST, PyUnicode_InternFromString("quick_stop")) < 0 ||
        keep(&STEP_VALUES, PyUnicode_InternFromString("step_values")) < 0 ||
        keep(&NEXT_STATE, PyUnicode_InternFromString("_next_state")) < 0 ||
        keep(&SWITCH_OFF, PyUnicode_InternFromString("_switch_off")) < 0 ||
        keep(&MASTER_TIMEOUT, PyUnicode_InternFromString("master_timeout")) < 0 ||
        keep(&MAX_CURRENT, PyUnicode_InternFromString("max_current")) < 0 ||
        keep(&KP, PyUnicode_InternFromString("kp")) < 0 || keep(&KI, PyUnicode_InternFromString("ki")) < 0 ||
        keep(&KD, PyUnicode_InternFromString("kd")) < 0 ||
        keep(&OUTPUT_LIMIT, PyUnicode_InternFromString("output_limit")) < 0 ||
        keep(&HOMING, PyUnicode_InternFromString("homing")) < 0 ||
        keep(&DIRECTION, PyUnicode_InternFromString("direction")) < 0 ||
        keep(&SWITCH_POSITION, PyUnicode_InternFromString("switch_position")) < 0 ||
        keep(&BRAKE_ENGAGE_TIME, PyUnicode_InternFromString("brake_engage_time")) < 0 ||
        keep(&BRAKE_HOLDING, PyUnicode_InternFromString("brake_holding")) < 0 ||
        keep(&CONTROL_NAME, PyUnicode_InternFromString("control")) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* A slot's value (borrowed), AttributeError if it was never set. */
static PyObject *slot(PyObject *object, const Layout *layout, const char *const *names, int field) {
    PyObject *value = SLOT(object, *layout, field);
    if (value == NULL) PyErr_Format(PyExc_AttributeError, "%s has no attribute %s", Py_TYPE(object)->tp_name, names[field]);
    return value;
}

static int as_double(PyObject *value, double *out) {
    if (value == NULL) return -1;
    *out = PyFloat_CheckExact(value) ? PyFloat_AS_DOUBLE(value) : PyFloat_AsDouble(value);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

static int as_truth(PyObject *value) {
    if (value == NULL) return -1;
    return value == Py_True ? 1 : value == Py_False ? 0 : PyObject_IsTrue(value);
}

/* Store a new float (or object) in a slot, dropping the old value. */
static int store_double(PyObject *object, const Layout *layout, int field, double number) {
    PyObject *value = PyFloat_FromDouble(number);
    if (value == NULL) return -1;
    Py_XSETREF(SLOT(object, *layout, field), value);
    return 0;
}

static void store_object(PyObject *object, const Layout *layout, int field, PyObject *value) {
    Py_INCREF(value);
    Py_XSETREF(SLOT(object, *layout, field), value);
}

#define DRIVE(object, field) slot(object, &drive_layout, DRIVE_NAMES, field)
#define CONTROL(object, field) slot(object, &control_layout, CONTROL_NAMES, field)
#define LOOP(object, field) slot(object, &loop_layout, LOOP_NAMES, field)
#define PID_SLOT(object, field) slot(object, &pid_layout, PID_NAMES, field)

/* object.<name> (a generic attribute: the frozen settings and gains) as a double. */
static int attribute_double(PyObject *object, PyObject *name, double *out) {
    PyObject *value = PyObject_GetAttr(object, name);
    int status = as_double(value, out);
    Py_XDECREF(value);
    return status;
}

/* Python's min(max(x, -limit), limit): max keeps x unless -limit is greater, min keeps that
 * unless limit is smaller (so a NaN passes through, as there). */
static double clamp(double x, double limit) {
    const double low = -limit > x ? -limit : x;
    return limit < low ? limit : low;
}

/* PID.update(setpoint, measurement, setpoint_velocity, feedforward) on a PID whose
 * _last_position is set (drives.pid: the same operations in the same order); -1 on error. */
static int pid_update(PyObject *pid, double setpoint, double measurement, double setpoint_velocity,
                      double feedforward, double *out) {
    PyObject *gains = PID_SLOT(pid, P_GAINS);
    double kp, ki, kd, limit, dt, alpha, integral, velocity, reference_velocity, last, last_setpoint_velocity;
    if (gains == NULL || attribute_double(gains, KP, &kp) < 0 || attribute_double(gains, KI, &ki) < 0 ||
        attribute_double(gains, KD, &kd) < 0 || attribute_double(gains, OUTPUT_LIMIT, &limit) < 0 ||
        as_double(PID_SLOT(pid, P_DT), &dt) < 0 || as_double(PID_SLOT(pid, P_ALPHA), &alpha) < 0 ||
        as_double(PID_SLOT(pid, P_INTEGRAL), &integral) < 0 || as_double(PID_SLOT(pid, P_VELOCITY), &velocity) < 0 ||
        as_double(PID_SLOT(pid, P_REFERENCE_VELOCITY), &reference_velocity) < 0 ||
        as_double(PID_SLOT(pid, P_LAST_POSITION), &last) < 0 ||
        as_double(PID_SLOT(pid, P_LAST_SETPOINT_VELOCITY), &last_setpoint_velocity) < 0) {
        return -1;
    }
    const double raw_velocity = (measurement - last) / dt;
    velocity = alpha * velocity + (1.0 - alpha) * raw_velocity;
    const double mean_reference = 0.5 * (setpoint_velocity + last_setpoint_velocity);
    reference_velocity = alpha * reference_velocity + (1.0 - alpha) * mean_reference;
    const double error = setpoint - measurement;
    const double unsaturated = kp * error + integral + kd * (reference_velocity - velocity) + feedforward;
    const double output = clamp(unsaturated, limit);
    const int saturated = output != unsaturated;
    if (!(saturated && (error > 0.0) == (unsaturated > output))) {
        integral += dt * ki * error;
        integral = clamp(integral, limit);
    }
    if (store_double(pid, &pid_layout, P_LAST_POSITION, measurement) < 0 ||
        store_double(pid, &pid_layout, P_VELOCITY, velocity) < 0 ||
        store_double(pid, &pid_layout, P_LAST_SETPOINT_VELOCITY, setpoint_velocity) < 0 ||
        store_double(pid, &pid_layout, P_REFERENCE_VELOCITY, reference_velocity) < 0 ||
        store_double(pid, &pid_layout, P_INTEGRAL, integral) < 0 || store_double(pid, &pid_layout, P_OUTPUT, output) < 0) {
        return -1;
    }
    store_object(pid, &pid_layout, P_SATURATED, saturated ? Py_True : Py_False);
    *out = output;
    return 0;
}

/* A CSP drive's position-loop sample, DriveController._sample's CSP branch (no stop in force):
 * the target (extrapolated along its velocity offset when no new one came), the PID on it;
 * then step_values' clamp to the drive's current limit. -1 on error. */
static int csp_sample(PyObject *control, PyObject *pid, double period, double position, double *output) {
    PyObject *target = CONTROL(control, C_TARGET);
    int fresh = as_truth(CONTROL(control, C_FRESH_TARGET));
    if (target == NULL || fresh < 0) return -1;
    if (!PyTuple_Check(target) || PyTuple_GET_SIZE(target) != 3) {
        PyErr_SetString(PyExc_TypeError, "DriveController._target must be a tuple of 3 floats");
        return -1;
    }
    double goal[3];
    if (tuple_doubles(target, 3, goal, "DriveController._target") < 0) return -1;
    if (!fresh) { /* a missed cycle: extrapolate along the velocity offset */
        goal[0] += goal[1] * period;
        PyObject *moved = Py_BuildValue("(ddd)", goal[0], goal[1], goal[2]);
        if (moved == NULL) return -1;
        Py_XSETREF(SLOT(control, control_layout, C_TARGET), moved);
    }
    store_object(control, &control_layout, C_FRESH_TARGET, Py_False);
    if (store_double(control, &control_layout, C_REFERENCE_POSITION, goal[0]) < 0 ||
        store_double(control, &control_layout, C_REFERENCE_VELOCITY, goal[1]) < 0) {
        return -1;
    }
    double sample, limit;
    if (pid_update(pid, goal[0], position, goal[1], goal[2], &sample) < 0) return -1;
    PyObject *settings = CONTROL(control, C_SETTINGS);
    if (settings == NULL || attribute_double(settings, MAX_CURRENT, &limit) < 0) return -1;
    *output = clamp(sample, limit);
    return 0;
}

/* Python's round(x) * resolution for a finite x: round half to even, and a zero without sign
 * (round() gives the int 0, which multiplies to +0.0). */
static double quantize(double x, double resolution) {
    double counts = nearbyint(x / resolution);
    if (counts == 0.0) counts = 0.0;
    return counts * resolution;
}

/* The controller's step_values(dt, position, velocity, switch) -> (current, power), from C where
 * the common case allows (the module doc), else by calling the method itself; -1 on error. */
static int controller_step(PyObject *control, double dt, double position, double velocity, int switched,
                           double *current, int *power) {
    PyObject *settings = CONTROL(control, C_SETTINGS);
    if (settings == NULL) return -1;
    PyObject *timeout_value = PyObject_GetAttr(settings, MASTER_TIMEOUT);
    if (timeout_value == NULL) return -1;
    double timeout = 0.0;
    int no_watchdog = timeout_value == Py_None;
    int status = no_watchdog ? 0 : as_double(timeout_value, &timeout);
    Py_DECREF(timeout_value);
    if (status < 0) return -1;
    int powered = as_truth(CONTROL(control, C_POWER));
    PyObject *stopping = CONTROL(control, C_STOPPING);
    int halted = as_truth(CONTROL(control, C_HALTED));
    double since_command;
    if (powered < 0 || stopping == NULL || halted < 0 || as_double(CONTROL(control, C_SINCE_COMMAND), &since_command) < 0) {
        return -1;
    }
    int not_stopping = stopping == Py_None;
    int in_python = !no_watchdog && powered && (not_stopping || halted) && since_command > timeout;
    int host_current = 0, sampling = 0;
    double until_sample = 0.0, period = 0.0;
    if (!in_python && powered) {
        PyObject *mode = CONTROL(control, C_MODE);
        if (mode == NULL) return -1;
        host_current = mode == CST && not_stopping;
        if (!host_current && dt > 0.0) {
            PyObject *period_value = CONTROL(control, C_PERIOD);
            if (period_value == NULL) return -1;
            if (period_value == Py_None) {
                in_python = 1; /* no position loop: the Python says what that means */
            } else {
                if (as_double(period_value, &period) < 0) return -1;
                if (as_double(CONTROL(control, C_UNTIL_SAMPLE), &until_sample) < 0) return -1;
                sampling = until_sample <= 1e-9 * period; /* the position loop samples */
                /* In C: a CSP drive's sample without a stop, on a PID that has a last position. */
                PyObject *pid = CONTROL(control, C_PID);
                if (pid == NULL) return -1;
                in_python = sampling && !(not_stopping && mode == CSP && PyObject_TypeCheck(pid, pid_layout.type) &&
                                          SLOT(pid, pid_layout, P_LAST_POSITION) != NULL &&
                                          SLOT(pid, pid_layout, P_LAST_POSITION) != Py_None);
            }
        }
    }
    if (in_python) {
        PyObject *args[5] = {control, PyFloat_FromDouble(dt), PyFloat_FromDouble(position),
                             PyFloat_FromDouble(velocity), switched ? Py_True : Py_False};
        PyObject *output = NULL;
        if (args[1] != NULL && args[2] != NULL && args[3] != NULL) {
            output = PyObject_VectorcallMethod(STEP_VALUES, args, 5, NULL);
        }
        Py_XDECREF(args[1]);
        Py_XDECREF(args[2]);
        Py_XDECREF(args[3]);
        if (output == NULL) return -1;
        if (!PyTuple_Check(output) || PyTuple_GET_SIZE(output) != 3) {
            Py_DECREF(output);
            PyErr_SetString(PyExc_TypeError, "step_values must return (current, power, brake)");
            return -1;
        }
        status = as_double(PyTuple_GET_ITEM(output, 0), current);
        *power = as_truth(PyTuple_GET_ITEM(output, 1));
        Py_DECREF(output);
        return (status < 0 || *power < 0) ? -1 : 0;
    }
    /* step_values' own order: the measurement latched, the output, the clocks. */
    if (store_double(control, &control_layout, C_LAST_POSITION, position) < 0) return -1;
    if (store_double(control, &control_layout, C_LAST_VELOCITY, velocity) < 0) return -1;
    double output = 0.0;
    if (powered) {
        if (host_current) {
            PyObject *command = CONTROL(control, C_CURRENT_COMMAND);
            if (command == NULL) return -1;
            store_object(control, &control_layout, C_OUTPUT, command); /* the same float object */
            if (as_double(command, &output) < 0) return -1;
            if (store_double(control, &control_layout, C_UNTIL_SAMPLE, 0.0) < 0) return -1;
        } else if (sampling) {
            if (csp_sample(control, CONTROL(control, C_PID), period, position, &output) < 0) return -1;
            if (store_double(control, &control_layout, C_OUTPUT, output) < 0) return -1;
            until_sample = until_sample + period;
            if (store_double(control, &control_layout, C_UNTIL_SAMPLE, until_sample - dt) < 0) return -1;
        } else {
            if (dt > 0.0 && store_double(control, &control_layout, C_UNTIL_SAMPLE, until_sample - dt) < 0) return -1;
            if (as_double(CONTROL(control, C_OUTPUT), &output) < 0) return -1;
        }
    }
    if (store_double(control, &control_layout, C_SINCE_COMMAND, since_command + dt) < 0) return -1;
    int brake = as_truth(CONTROL(control, C_BRAKE));
    if (brake < 0) return -1;
    if (brake) {
        double brake_time;
        if (as_double(CONTROL(control, C_BRAKE_TIME), &brake_time) < 0) return -1;
        if (store_double(control, &control_layout, C_BRAKE_TIME, brake_time + dt) < 0) return -1;
    }
    *current = powered ? output : 0.0;
    *power = powered;
    return 0;
}

/* Whether advance_drives can step this drive itself: the bound classes (or subclasses) all the
 * way down; otherwise the Python law steps it. */
static int bound_drive(PyObject *drive) {
    if (!PyObject_TypeCheck(drive, drive_layout.type)) return 0;
    PyObject *control = SLOT(drive, drive_layout, D_CONTROL), *loop = SLOT(drive, drive_layout, D_LOOP);
    return control != NULL && loop != NULL && PyObject_TypeCheck(control, control_layout.type) &&
           PyObject_TypeCheck(loop, loop_layout.type);
}

static int call_fallback(PyObject *drive, double dt, double joint_position, double joint_velocity, double *effort) {
    PyObject *result = PyObject_CallFunction(FALLBACK, "Oddd", drive, dt, joint_position, joint_velocity);
    if (result == NULL) return -1;
    int status = as_double(result, effort);
    Py_DECREF(result);
    return status;
}

/* One drive over dt from its joint's position and velocity: advance_drive's law (the bound
 * fallback for what the module doc leaves to it); its effort (N or N*m) in *effort. */
static int advance_one(PyObject *drive, double dt, double joint_position, double joint_velocity, double *effort) {
    if (!bound_drive(drive)) return call_fallback(drive, dt, joint_position, joint_velocity, effort);
    double k[DRIVE_CONSTANTS];
    PyObject *constants = DRIVE(drive, D_CONSTANTS);
    if (constants == NULL || tuple_doubles(constants, DRIVE_CONSTANTS, k, "SimulatedDrive._constants") < 0) return -1;
    const double ratio = k[0], max_speed = k[1], resolution = k[2], velocity_threshold = k[3];
    const double torque_constant = k[4], efficiency = k[5];
    const double speed = ratio * joint_velocity;
    PyObject *state = DRIVE(drive, D_STATE);
    if (state == NULL) return -1;
    if (!isfinite(joint_position) || !isfinite(joint_velocity) || (fabs(speed) > max_speed && state != FAULT)) {
        /* A bad input (advance_drive raises naming it) or an overspeed (it faults the drive). */
        return call_fallback(drive, dt, joint_position, joint_velocity, effort);
    }
    if (store_double(drive, &drive_layout, D_JOINT_POSITION, joint_position) < 0) return -1;
    /* The encoder and the velocity's backward difference. */
    const double position = quantize(joint_position, resolution);
    PyObject *origin_value = DRIVE(drive, D_RAW_ORIGIN);
    if (origin_value == NULL) return -1;
    double origin = position;
    if (origin_value == Py_None) {
        if (store_double(drive, &drive_layout, D_RAW_ORIGIN, position) < 0) return -1;
    } else if (as_double(origin_value, &origin) < 0) {
        return -1;
    }
    if (origin == 0.0) origin = 0.0; /* `_raw_origin or 0.0`: a zero of either sign is 0.0 */
    PyObject *anchor_value = DRIVE(drive, D_VELOCITY_ANCHOR);
    double velocity;
    if (anchor_value == NULL || as_double(DRIVE(drive, D_VELOCITY), &velocity) < 0) return -1;
    if (anchor_value == Py_None) {
        if (store_double(drive, &drive_layout, D_VELOCITY_ANCHOR, position) < 0) return -1;
    } else {
        double anchor, elapsed, previous_dt;
        if (as_double(anchor_value, &anchor) < 0 || as_double(DRIVE(drive, D_VELOCITY_ELAPSED), &elapsed) < 0 ||
            as_double(DRIVE(drive, D_PREVIOUS_DT), &previous_dt) < 0) {
            return -1;
        }
        elapsed = elapsed + previous_dt;
        if (elapsed >= velocity_threshold) {
            velocity = (position - anchor) / elapsed;
            if (store_double(drive, &drive_layout, D_VELOCITY, velocity) < 0) return -1;
            if (store_double(drive, &drive_layout, D_VELOCITY_ANCHOR, position) < 0) return -1;
            elapsed = 0.0;
        }
        if (store_double(drive, &drive_layout, D_VELOCITY_ELAPSED, elapsed) < 0) return -1;
    }
    if (store_double(drive, &drive_layout, D_POSITION, position) < 0) return -1;
    if (store_double(drive, &drive_layout, D_PREVIOUS_DT, dt) < 0) return -1;
    PyObject *control = SLOT(drive, drive_layout, D_CONTROL); /* borrowed: the drive holds it */
    Py_INCREF(control); /* the step may call Python, which could replace it */
    /* The homing switch: active at or beyond its position, towards the end of travel. */
    int switched = 0;
    PyObject *settings = CONTROL(control, C_SETTINGS);
    PyObject *homing = settings == NULL ? NULL : PyObject_GetAttr(settings, HOMING);
    if (homing == NULL) goto failed;
    if (homing != Py_None) {
        double direction, switch_position;
        PyObject *direction_value = PyObject_GetAttr(homing, DIRECTION);
        int status = as_double(direction_value, &direction);
        Py_XDECREF(direction_value);
        PyObject *switch_value = status < 0 ? NULL : PyObject_GetAttr(homing, SWITCH_POSITION);
        status = as_double(switch_value, &switch_position);
        Py_XDECREF(switch_value);
        if (status < 0) {
            Py_DECREF(homing);
            goto failed;
        }
        switched = direction * (joint_position - switch_position) >= 0.0;
    }
    Py_DECREF(homing);
    double reference = 0.0;
    int power = 0;
    if (controller_step(control, dt, position - origin, velocity, switched, &reference, &power) < 0) goto failed;
    /* The drive stopped itself (master watchdog): latched like a commanded quick stop. */
    state = DRIVE(drive, D_STATE);
    if (state == NULL) goto failed;
    if (state == ENABLED) {
        PyObject *stopping = CONTROL(control, C_STOPPING);
        int halted = as_truth(CONTROL(control, C_HALTED));
        if (stopping == NULL || halted < 0) goto failed;
        if (stopping != Py_None && !halted) {
            PyObject *next = PyObject_CallMethodOneArg(drive, NEXT_STATE, QUICK_STOP_REQUEST);
            if (next == NULL) goto failed;
            store_object(drive, &drive_layout, D_STATE, next);
            Py_DECREF(next);
            PyObject *fault = CONTROL(control, C_FAULT);
            if (fault == NULL) goto failed;
            store_object(drive, &drive_layout, D_FAULT, fault);
        }
    }
    Py_DECREF(control);
    double current;
    if (as_double(DRIVE(drive, D_CURRENT), &current) < 0) return -1;
    if (power) {
        if (store_double(drive, &drive_layout, D_REFERENCE, reference) < 0) return -1;
        double c[CONSTANTS], integral, voltage, until_sample;
        PyObject *loop_constants = DRIVE(drive, D_LOOP_CONSTANTS);
        if (loop_constants == NULL ||
            tuple_doubles(loop_constants, CONSTANTS, c, "SimulatedDrive._current_loop_constants") < 0) {
            return -1;
        }
        PyObject *loop = DRIVE(drive, D_LOOP);
        if (loop == NULL) return -1;
        int saturated = as_truth(LOOP(loop, L_SATURATED));
        if (saturated < 0 || as_double(LOOP(loop, L_INTEGRAL), &integral) < 0 ||
            as_double(DRIVE(drive, D_VOLTAGE), &voltage) < 0 || as_double(DRIVE(drive, D_UNTIL_SAMPLE), &until_sample) < 0) {
            return -1;
        }
        current_loop(c, reference, speed, dt, &integral, &saturated, &current, &voltage, &until_sample);
        if (store_double(loop, &loop_layout, L_INTEGRAL, integral) < 0) return -1;
        store_object(loop, &loop_layout, L_SATURATED, saturated ? Py_True : Py_False);
        if (store_double(drive, &drive_layout, D_CURRENT, current) < 0 ||
            store_double(drive, &drive_layout, D_VOLTAGE, voltage) < 0 ||
            store_double(drive, &drive_layout, D_UNTIL_SAMPLE, until_sample) < 0) {
            return -1;
        }
    } else {
        double held;
        if (as_double(DRIVE(drive, D_REFERENCE), &held) < 0) return -1;
        if (current != 0.0 || held != 0.0) {
            PyObject *none = PyObject_CallMethodNoArgs(drive, SWITCH_OFF);
            if (none == NULL) return -1;
            Py_DECREF(none);
            if (as_double(DRIVE(drive, D_CURRENT), &current) < 0) return -1;
        }
    }
    *effort = torque_constant * current * ratio * efficiency;
    return 0;
failed:
    Py_DECREF(control);
    return -1;
}

/* A buffer of `count` C doubles (writable if asked), TypeError naming `what` otherwise. */
static int double_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t count, int writable, const char *what) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) return -1;
    const char *format = view->format == NULL ? "B" : view->format;
    if (view->itemsize != sizeof(double) || strcmp(format, "d") != 0 || view->len != count * (Py_ssize_t)sizeof(double)) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "advance_drives: %s must be %zd contiguous float64 values", what, count);
        return -1;
    }
    return 0;
}

/* (drives, dt, positions, velocities, efforts) -> efforts: drive_array's
 * advance_drives_in_python (dt checked by the caller). */
static PyObject *advance_drives(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "advance_drives takes 5 arguments, got %zd", nargs);
        return NULL;
    }
    if (drive_layout.type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "advance_drives: bind() the drive classes first");
        return NULL;
    }
    PyObject *drives = args[0];
    if (!PyTuple_Check(drives)) {
        PyErr_SetString(PyExc_TypeError, "advance_drives: drives must be a tuple");
        return NULL;
    }
    const double dt = PyFloat_AsDouble(args[1]);
    if (dt == -1.0 && PyErr_Occurred()) return NULL;
    const Py_ssize_t n = PyTuple_GET_SIZE(drives);
    Py_buffer positions, velocities, efforts;
    if (double_buffer(args[2], &positions, n, 0, "positions") < 0) return NULL;
    if (double_buffer(args[3], &velocities, n, 0, "velocities") < 0) {
        PyBuffer_Release(&positions);
        return NULL;
    }
    if (double_buffer(args[4], &efforts, n, 1, "efforts") < 0) {
        PyBuffer_Release(&positions);
        PyBuffer_Release(&velocities);
        return NULL;
    }
    const double *q = positions.buf, *qd = velocities.buf;
    double *out = efforts.buf;
    int status = 0;
    for (Py_ssize_t j = 0; j < n && status == 0; j++) {
        double effort;
        status = advance_one(PyTuple_GET_ITEM(drives, j), dt, q[j], qd[j], &effort);
        if (status == 0) out[j] = effort;
    }
    PyBuffer_Release(&positions);
    PyBuffer_Release(&velocities);
    PyBuffer_Release(&efforts);
    if (status < 0) return NULL;
    Py_INCREF(args[4]);
    return args[4];
}

/* One drive's control.brake_holding: DriveController's property (`brake and brake_time >=
 * settings.brake_engage_time`) from the slots for a bound drive whose controller is exactly a
 * DriveController, else the property itself. 1, 0, or -1 with an exception set. */
static int brake_holding(PyObject *drive) {
    PyObject *control = bound_drive(drive) ? SLOT(drive, drive_layout, D_CONTROL) : NULL;
    if (control == NULL || !Py_IS_TYPE(control, control_layout.type)) {
        PyObject *owner = PyObject_GetAttr(drive, CONTROL_NAME);
        PyObject *value = owner == NULL ? NULL : PyObject_GetAttr(owner, BRAKE_HOLDING);
        Py_XDECREF(owner);
        if (value == NULL) return -1;
        const int truth = PyObject_IsTrue(value);
        Py_DECREF(value);
        return truth;
    }
    const int brake = as_truth(CONTROL(control, C_BRAKE));
    if (brake <= 0) return brake;
    double brake_time, engage_time;
    PyObject *settings = CONTROL(control, C_SETTINGS);
    if (as_double(CONTROL(control, C_BRAKE_TIME), &brake_time) < 0 || settings == NULL ||
        attribute_double(settings, BRAKE_ENGAGE_TIME, &engage_time) < 0)
        return -1;
    return brake_time >= engage_time;
}

/* (drives) -> a tuple of bools: drive_array.brakes_engaged's, each drive's control.brake_holding. */
static PyObject *brakes_holding(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 1 || !PyTuple_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "brakes_holding takes one tuple of drives");
        return NULL;
    }
    if (drive_layout.type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "brakes_holding: bind() the drive classes first");
        return NULL;
    }
    const Py_ssize_t n = PyTuple_GET_SIZE(args[0]);
    PyObject *result = PyTuple_New(n);
    if (result == NULL) return NULL;
    for (Py_ssize_t j = 0; j < n; j++) {
        const int holding = brake_holding(PyTuple_GET_ITEM(args[0], j));
        if (holding < 0) {
            Py_DECREF(result);
            return NULL;
        }
        PyObject *value = holding ? Py_True : Py_False;
        Py_INCREF(value);
        PyTuple_SET_ITEM(result, j, value);
    }
    return result;
}

static PyMethodDef methods[] = {
    {"current_loop_samples", (PyCFunction)(void (*)(void))current_loop_samples, METH_FASTCALL,
     "current_loop.current_loop_samples, compiled (same arguments, same results bit for bit)."},
    {"bind", (PyCFunction)(void (*)(void))bind, METH_FASTCALL,
     "bind(SimulatedDrive, DriveController, CurrentLoop, PID, DriveState.ENABLED, DriveState.FAULT, "
     "DriveMode.CST, DriveMode.CSP, advance_drive): the classes whose slots advance_drives reads, the "
     "members it compares with, the Python step it leaves the rest to."},
    {"advance_drives", (PyCFunction)(void (*)(void))advance_drives, METH_FASTCALL,
     "drive_array.advance_drives, compiled (same arguments, same results bit for bit)."},
    {"brakes_holding", (PyCFunction)(void (*)(void))brakes_holding, METH_FASTCALL,
     "drive_array.brakes_holding, compiled: each drive's control.brake_holding, as a tuple of bools."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_drive_kernel",
    "The simulated drives' physics step, compiled (drive_kernel.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__drive_kernel(void) { return PyModule_Create(&module); }
