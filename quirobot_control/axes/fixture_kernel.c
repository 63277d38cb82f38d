/* The hardware component's per-cycle no-go zone check, compiled: the twin of fixture_monitor.py's
 * `zone_hit_in_python`, built as the extension quirobot_control.axes._fixture_kernel when a C
 * compiler and Python's headers are there (setup.py, CMakeLists.txt).
 *
 * Same operations in the same order on IEEE doubles, so the answers are bit for bit the Python
 * law's (test/control/axes/test_fixture_monitor.py): built with -ffp-contract=off (no fused
 * multiply-adds), sin and cos from the same libm as Python's math module. It covers box zones on
 * the nominal chain with finite inputs, which is every cycle of a run; anything else (a capsule,
 * a calibrated chain, a NaN, a value that is not a float) returns None before anything is
 * computed and the Python twin answers, naming the problem as it always did. Why C: three
 * forward kinematics and nine slab tests a 1 kHz cycle, a tenth of `quirobot simulate`
 * interpreted (bench/sim_speed.py --parts).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

#define AXES 6
#define ARM 5
/* constants: l4, l5 (m), bit radius, body radius (m), STILL (m or rad), the six quick-stop
 * decelerations (m/s^2 or rad/s^2). */
#define CONSTANTS (5 + AXES)
/* A box zone: its centre (3), then per slab in the zone's order its axis (3) and half size (1). */
#define BOX 15
#define PARTS 3

typedef struct {
    double tip[3], tool0[3], wrist[3];
} Tool;

/* virtual_fixtures.tool_points_one through kinematics.forward._closed_form (feed 0 there, the
 * tip moved along the axis here): q holds 6 finite doubles. */
static void tool_points(const double *q, double l4, double l5, Tool *tool) {
    const double s4 = sin(q[3]), c4 = cos(q[3]), s5 = sin(q[4]), c5 = cos(q[4]);
    const double ax = c4 * c5, ay = -s4 * c5;
    const double reach = l5 + 0.0;
    const double origin[3] = {q[0] + reach * ax, q[1] + reach * ay, -q[2] - l4 - reach * s5};
    const double axis[3] = {ax, ay, -s5};
    const double feed = q[ARM];
    for (int k = 0; k < 3; k++) {
        tool->tool0[k] = origin[k];
        tool->tip[k] = origin[k] + feed * axis[k];
        tool->wrist[k] = origin[k] - l5 * axis[k];
    }
}

/* NoGoZone.hits_one for a box: the segment a -> b of `radius` against the box grown by it. */
static int box_hits(const double *zone, const double *a, const double *b, double radius) {
    double enter = 0.0, leave = 1.0;
    const double ax = a[0] - zone[0], ay = a[1] - zone[1], az = a[2] - zone[2];
    const double bx = b[0] - zone[0], by = b[1] - zone[1], bz = b[2] - zone[2];
    for (int slab = 0; slab < 3; slab++) {
        const double *column = zone + 3 + 4 * slab;
        const double a_local = ax * column[0] + ay * column[1] + az * column[2];
        const double b_local = bx * column[0] + by * column[1] + bz * column[2];
        const double half = column[3] + radius;
        const double d = b_local - a_local;
        if (fabs(d) < 1e-15) {
            if (fabs(a_local) > half) return 0;
            continue;
        }
        const double t1 = (-half - a_local) / d, t2 = (half - a_local) / d;
        const double low = t2 < t1 ? t2 : t1;
        const double high = t2 > t1 ? t2 : t1;
        enter = low > enter ? low : enter;
        leave = high < leave ? high : leave;
        if (enter > leave) return 0;
    }
    return 1;
}

/* virtual_fixtures._first_hit: the first (zone, part) touched, zones outer, parts in TOOL_PARTS
 * order; 0 if none. */
static int first_hit(const double *zones, Py_ssize_t count, const Tool *tool, double bit, double body,
                     Py_ssize_t *zone_index, int *part_index) {
    const double *starts[PARTS] = {tool->tip, tool->tool0, tool->wrist};
    const double *ends[PARTS] = {tool->tip, tool->tip, tool->tool0};
    const double radii[PARTS] = {0.0, bit, body};
    for (Py_ssize_t z = 0; z < count; z++) {
        for (int p = 0; p < PARTS; p++) {
            if (box_hits(zones + BOX * z, starts[p], ends[p], radii[p])) {
                *zone_index = z;
                *part_index = p;
                return 1;
            }
        }
    }
    return 0;
}

/* A list of AXES exact floats, all finite, into out; 0 otherwise (the Python twin answers). */
static int finite_axes(PyObject *list, double *out) {
    if (!PyList_CheckExact(list) || PyList_GET_SIZE(list) != AXES) return 0;
    for (int k = 0; k < AXES; k++) {
        PyObject *item = PyList_GET_ITEM(list, k);
        if (!PyFloat_CheckExact(item)) return 0;
        out[k] = PyFloat_AS_DOUBLE(item);
        if (!isfinite(out[k])) return 0;
    }
    return 1;
}

/* A tuple of floats into out (its length checked by the caller); -1 with an exception set. */
static int floats(PyObject *tuple, double *out, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(tuple, i));
        if (out[i] == -1.0 && PyErr_Occurred()) return -1;
    }
    return 0;
}

/* (constants, zones, commanded, measured, dt, velocity) -> (tip, hit) as zone_hit_in_python's, or
 * None where the Python twin must answer. zones: a tuple of BOX floats per box. */
static PyObject *zone_hit(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "zone_hit takes 6 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *constants_tuple = args[0], *zones_tuple = args[1];
    if (!PyTuple_Check(constants_tuple) || PyTuple_GET_SIZE(constants_tuple) != CONSTANTS) {
        PyErr_Format(PyExc_TypeError, "zone_hit: constants must be a tuple of %d floats", CONSTANTS);
        return NULL;
    }
    if (!PyTuple_Check(zones_tuple) || PyTuple_GET_SIZE(zones_tuple) % BOX != 0) {
        PyErr_Format(PyExc_TypeError, "zone_hit: zones must be a tuple of %d floats per box", BOX);
        return NULL;
    }
    double constants[CONSTANTS], commanded[AXES], measured[AXES], velocity[AXES];
    if (floats(constants_tuple, constants, CONSTANTS) < 0) return NULL;
    const double dt = PyFloat_AsDouble(args[4]);
    if (dt == -1.0 && PyErr_Occurred()) return NULL;
    if (!(finite_axes(args[2], commanded) && finite_axes(args[3], measured) && finite_axes(args[5], velocity) &&
          isfinite(dt))) {
        Py_RETURN_NONE;
    }
    /* _closed_form's own check (on the sum, as it does): finite here, so it would not raise. */
    if (!isfinite(commanded[0] + commanded[1] + commanded[2] + commanded[3] + commanded[4]) ||
        !isfinite(measured[0] + measured[1] + measured[2] + measured[3] + measured[4])) {
        Py_RETURN_NONE;
    }
    const Py_ssize_t count = PyTuple_GET_SIZE(zones_tuple) / BOX;
    double stack_zones[4 * BOX];
    double *zones = count <= 4 ? stack_zones : PyMem_Malloc(sizeof(double) * BOX * count);
    if (zones == NULL) return PyErr_NoMemory();
    PyObject *result = NULL;
    if (floats(zones_tuple, zones, BOX * count) < 0) goto done;
    const double l4 = constants[0], l5 = constants[1], bit = constants[2], body = constants[3];
    const double still = constants[4];
    const double *deceleration = constants + 5;
    Tool tool;
    tool_points(commanded, l4, l5, &tool);
    const double tip[3] = {tool.tip[0], tool.tip[1], tool.tip[2]};
    Py_ssize_t zone = -1;
    int part = -1, label = -1;
    if (count > 0) {
        if (first_hit(zones, count, &tool, bit, body, &zone, &part)) {
            label = 0;
        } else {
            Tool at_measured;
            tool_points(measured, l4, l5, &at_measured);
            if (first_hit(zones, count, &at_measured, bit, body, &zone, &part)) {
                label = 1;
            } else {
                /* axes.limits.stopping_position, one period dt ahead, per axis. */
                double stop[AXES];
                int moved = 0;
                for (int k = 0; k < AXES; k++) {
                    const double v = velocity[k];
                    stop[k] = commanded[k] + v * dt + v * fabs(v) / (2.0 * deceleration[k]);
                    if (!isfinite(stop[k])) { /* an overflow: the Python twin answers (or raises) */
                        result = Py_None;
                        Py_INCREF(result);
                        goto done;
                    }
                    if (fabs(stop[k] - commanded[k]) > still) moved = 1; /* max(...) > STILL */
                }
                if (moved) {
                    Tool stopping;
                    tool_points(stop, l4, l5, &stopping);
                    if (first_hit(zones, count, &stopping, bit, body, &zone, &part)) label = 2;
                }
            }
        }
    }
    if (label < 0) {
        result = Py_BuildValue("([ddd]O)", tip[0], tip[1], tip[2], Py_None);
    } else {
        result = Py_BuildValue("([ddd](ini))", tip[0], tip[1], tip[2], label, zone, part);
    }
done:
    if (zones != stack_zones) PyMem_Free(zones);
    return result;
}

static PyMethodDef methods[] = {
    {"zone_hit", (PyCFunction)(void (*)(void))zone_hit, METH_FASTCALL,
     "fixture_monitor.zone_hit_in_python for box zones on the nominal chain, compiled (the same answer bit "
     "for bit), or None where the Python twin must answer."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fixture_kernel",
    "The hardware component's per-cycle no-go zone check, compiled (fixture_kernel.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__fixture_kernel(void) { return PyModule_Create(&module); }
