/* The bone's thrust fed forward over one control period on the nominal chain, compiled: the twin of
 * thrust_feedforward.py's `ThrustFeedForward.update_in_python` where the chain is nominal, built as
 * the extension quirobot_control.hardware._feedforward_kernel when a C compiler and Python's
 * headers are there (setup.py, CMakeLists.txt). Also the drive bridge's drilling monitor's tip
 * depth (tip_depth), the same FK and the same dot, every period.
 *
 * Same operations in the same order on IEEE doubles, so the results are bit for bit the Python's
 * (test/control/hardware/test_feedforward_kernel.py): built with -ffp-contract=off (no fused
 * multiply-adds where the Python has none), sin, cos, pow and exp from the same libm as Python's
 * math module. Two sums are numpy's, and taken as numpy takes them here:
 * - the depth, (tip - entry) @ direction: OpenBLAS's dot on x86-64 (Haswell and later), whose
 *   loop over the last (here: every) element is `dot += y[i] * x[i]` contracted to fused
 *   multiply-adds from 0.0, in order;
 * - the arm's efforts, einsum("ink,nk->ni") over three terms: its SIMD sum of products on two
 *   lanes from zero, the third term loaded into the first lane, so ((0 + p0) + p2) + (0 + p1).
 * thrust_feedforward.py uses this kernel only where numpy sums so (`sums`, checked at import).
 * A non-finite joint or a joint list that is not six floats returns None before anything is
 * computed and the Python answers, raising as it always did. Why C: six forward kinematics, the
 * bone model and a Jacobian's product every 1 ms control period, a tenth of an accuracy sample
 * interpreted.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

#include "../models/bone_law.h"

#define AXES 6
#define ARM 5
/* constants: l4, l5 (m), entry (3, m), direction (3, unit), dt (s), JACOBIAN_STEP (m or rad). */
#define FIXED 10

typedef struct {
    double l4, l5, entry[3], direction[3], dt, step;
} Constants;

/* The drill tip (tool0 moved `feed` along its z axis, as update_in_python does it) and that axis,
 * through kinematics.forward._closed_form with feed 0: q holds 5 finite doubles. */
static void tip_and_axis(const double *q, double feed, double l4, double l5, double tip[3], double axis[3]) {
    const double s4 = sin(q[3]), c4 = cos(q[3]), s5 = sin(q[4]), c5 = cos(q[4]);
    const double ax = c4 * c5, ay = -s4 * c5;
    const double reach = l5 + 0.0;
    const double origin[3] = {q[0] + reach * ax, q[1] + reach * ay, -q[2] - l4 - reach * s5};
    axis[0] = ax;
    axis[1] = ay;
    axis[2] = -s5;
    for (int k = 0; k < 3; k++) tip[k] = origin[k] + axis[k] * feed;
}

/* numpy's a @ b of two 3-vectors (OpenBLAS's dot: fused, in order, from 0.0). */
static double blas_dot3(const double *a, const double *b) {
    double dot = 0.0;
    for (int k = 0; k < 3; k++) dot = fma(b[k], a[k], dot);
    return dot;
}

/* numpy's einsum sum of the three products p (two lanes from zero, the third term in the first). */
static double einsum_sum3(const double *p) { return ((0.0 + p[0]) + p[2]) + (0.0 + p[1]); }

/* `list` as the six joints q (arm then feed), 1; 0 where the Python must answer: not a list of six
 * floats, or a non-finite arm joint (kinematics.forward._closed_form's own check, on the sum as it
 * does it: it would raise). */
static int finite_joints(PyObject *list, double *q) {
    if (!PyList_CheckExact(list) || PyList_GET_SIZE(list) != AXES) return 0;
    for (int k = 0; k < AXES; k++) {
        PyObject *item = PyList_GET_ITEM(list, k);
        if (!PyFloat_CheckExact(item)) return 0;
        q[k] = PyFloat_AS_DOUBLE(item);
    }
    return isfinite(q[0] + q[1] + q[2] + q[3] + q[4]);
}

/* The drill tip of q (tool0 moved q's feed along its z axis) and that axis, and the tip's depth
 * past `entry` along `direction`: numpy's (tip - entry) @ direction. */
static double tip_depth_of(const double *q, double l4, double l5, const double *entry, const double *direction,
                           double tip[3], double axis[3]) {
    double offset[3];
    tip_and_axis(q, q[ARM], l4, l5, tip, axis);
    for (int k = 0; k < 3; k++) offset[k] = tip[k] - entry[k];
    return blas_dot3(offset, direction);
}

/* The tuple's first n floats into out; -1 with an exception set. */
static int floats(PyObject *tuple, double *out, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(tuple, i));
        if (out[i] == -1.0 && PyErr_Occurred()) return -1;
    }
    return 0;
}

/* constants (the tuple above) into c; -1 with an exception set. */
static int read_constants(PyObject *tuple, Constants *c) {
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != FIXED) {
        PyErr_Format(PyExc_TypeError, "update: constants must be a tuple of %d floats", FIXED);
        return -1;
    }
    double fixed[FIXED];
    if (floats(tuple, fixed, FIXED) < 0) return -1;
    c->l4 = fixed[0];
    c->l5 = fixed[1];
    for (int k = 0; k < 3; k++) {
        c->entry[k] = fixed[2 + k];
        c->direction[k] = fixed[5 + k];
    }
    c->dt = fixed[8];
    c->step = fixed[9];
    return 0;
}

/* (constants, law, q, previous depth or None, force, scale) -> (depth, force, efforts (6 floats))
 * as update_in_python's on the nominal chain (the depth and the bone model's force to keep), or
 * None where the Python must answer. law: the bone model's BoneThrust.law (bone_law.h); q: the six
 * commanded joints (a list of floats, arm then feed). */
static PyObject *update(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "update takes 6 arguments, got %zd", nargs);
        return NULL;
    }
    Constants c;
    BoneLaw law;
    if (read_constants(args[0], &c) < 0 || bone_law_read(args[1], &law, "update") < 0) return NULL;
    const double force_before = PyFloat_AsDouble(args[4]);
    if (force_before == -1.0 && PyErr_Occurred()) return NULL;
    const double scale = PyFloat_AsDouble(args[5]);
    if (scale == -1.0 && PyErr_Occurred()) return NULL;
    double previous = 0.0;
    const int first = args[3] == Py_None;
    if (!first) {
        previous = PyFloat_AsDouble(args[3]);
        if (previous == -1.0 && PyErr_Occurred()) return NULL;
    }
    double q[AXES];
    if (!finite_joints(args[2], q)) Py_RETURN_NONE;
    const double feed = q[ARM];
    double tip[3], axis[3];
    const double depth = tip_depth_of(q, c.l4, c.l5, c.entry, c.direction, tip, axis);
    const double rate = first ? 0.0 : (depth - previous) / c.dt;
    /* BoneThrust.update. */
    const double thrust = bone_lag(&law, force_before, bone_target(&law, scale, depth, rate), c.dt);
    double efforts[AXES] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    if (thrust != 0.0) {
        double force[3];
        for (int k = 0; k < 3; k++) force[k] = -thrust * c.direction[k];
        for (int i = 0; i < ARM; i++) {
            double row[ARM], shifted[3], shifted_axis[3], products[3];
            for (int j = 0; j < ARM; j++) row[j] = q[j];
            row[i] = q[i] + c.step;
            tip_and_axis(row, feed, c.l4, c.l5, shifted, shifted_axis);
            for (int k = 0; k < 3; k++) products[k] = (shifted[k] - tip[k]) / c.step * force[k];
            efforts[i] = einsum_sum3(products);
        }
        efforts[ARM] = axis[0] * force[0] + axis[1] * force[1] + axis[2] * force[2];
    }
    return Py_BuildValue("(dd[dddddd])", depth, thrust, efforts[0], efforts[1], efforts[2], efforts[3],
                         efforts[4], efforts[5]);
}

/* (constants, q) -> the drill tip's depth (m) past the entry along the direction, as the drive
 * bridge's drilling monitor takes it (bridge.hole_in_force._feed_depth): virtual_fixtures.
 * tool_points_one's tip of q on the nominal chain, then numpy's (tip - entry) @ direction. None
 * where the Python must answer: q not a list of six floats, a non-finite joint or depth.
 * constants: l4, l5 (m), entry (3, m), direction (3, unit); q: arm then feed. */
#define TIP_FIXED 8
static PyObject *tip_depth(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2 || !PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != TIP_FIXED) {
        PyErr_Format(PyExc_TypeError, "tip_depth takes a tuple of %d floats and a list of %d", TIP_FIXED,
                     AXES);
        return NULL;
    }
    double fixed[TIP_FIXED];
    if (floats(args[0], fixed, TIP_FIXED) < 0) return NULL;
    double q[AXES], tip[3], axis[3];
    if (!finite_joints(args[1], q)) Py_RETURN_NONE;
    const double depth = tip_depth_of(q, fixed[0], fixed[1], fixed + 2, fixed + 5, tip, axis);
    if (!isfinite(depth)) Py_RETURN_NONE;
    return PyFloat_FromDouble(depth);
}

/* (a, b) -> (a @ b, the einsum sum of a * b) for two lists of three floats as this kernel takes
 * them: what thrust_feedforward.py compares with numpy's own at import. */
static PyObject *sums(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    double a[3], b[3], products[3];
    for (Py_ssize_t n = 0; n < 2; n++) {
        PyObject *list = n < nargs ? args[n] : NULL;
        if (nargs != 2 || !PyList_CheckExact(list) || PyList_GET_SIZE(list) != 3) {
            PyErr_SetString(PyExc_TypeError, "sums takes two lists of 3 floats");
            return NULL;
        }
        for (int k = 0; k < 3; k++) {
            (n ? b : a)[k] = PyFloat_AsDouble(PyList_GET_ITEM(list, k));
            if ((n ? b : a)[k] == -1.0 && PyErr_Occurred()) return NULL;
        }
    }
    for (int k = 0; k < 3; k++) products[k] = a[k] * b[k];
    return Py_BuildValue("(dd)", blas_dot3(a, b), einsum_sum3(products));
}

static PyMethodDef methods[] = {
    {"update", (PyCFunction)(void (*)(void))update, METH_FASTCALL,
     "ThrustFeedForward.update_in_python on the nominal chain, compiled (the same numbers bit for bit), "
     "or None where the Python must answer."},
    {"tip_depth", (PyCFunction)(void (*)(void))tip_depth, METH_FASTCALL,
     "The drill tip's depth past the entry along the direction (the drive bridge's drilling "
     "monitor's, bit for bit), or None where the Python must answer."},
    {"sums", (PyCFunction)(void (*)(void))sums, METH_FASTCALL,
     "(a @ b, einsum's sum of a * b) of two 3-vectors, as the kernel takes them."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_feedforward_kernel",
    "The bone's thrust fed forward over one control period on the nominal chain, compiled "
    "(feedforward_kernel.c).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__feedforward_kernel(void) { return PyModule_Create(&module); }
