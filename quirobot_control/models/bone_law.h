/* models.bone.BoneThrust's law in C, for the compiled kernels that run it every period: the
 * realistic plant's (simulation/physics_kernel.c: the bone's contact) and the thrust
 * feed-forward's (hardware/feedforward_kernel.c). The same operations in the same order as
 * bone.py's, on doubles (the kernels are built with -ffp-contract=off; pow and exp are the C
 * library's Python calls), so the same numbers bit for bit.
 *
 * Its constants come from BoneThrust.law, a tuple of floats: the bone's point length (m),
 * reference feed rate (m/s), feed-rate exponent, reference thrust (N) and time constant (s),
 * bone.LINEAR_BELOW, then (start m, end m, thrust factor) of each layer. A header of static
 * functions: each kernel compiles its own copy.
 */
#ifndef QUIROBOT_BONE_LAW_H
#define QUIROBOT_BONE_LAW_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

#define BONE_LAW_FIXED 6
#define BONE_MAX_LAYERS 16

typedef struct {
    double point_length, reference_feed_rate, exponent, reference_thrust, time_constant, linear_below;
    Py_ssize_t layers;
    double bounds[BONE_MAX_LAYERS][3]; /* start (m), end (m), thrust factor */
} BoneLaw;

/* BoneThrust.law (the tuple above) into `law`; -1 with a TypeError naming `who` otherwise. */
static int bone_law_read(PyObject *tuple, BoneLaw *law, const char *who) {
    const Py_ssize_t size = PyTuple_Check(tuple) ? PyTuple_GET_SIZE(tuple) : -1;
    if (size < BONE_LAW_FIXED || (size - BONE_LAW_FIXED) % 3 != 0 ||
        (size - BONE_LAW_FIXED) / 3 > BONE_MAX_LAYERS) {
        PyErr_Format(PyExc_TypeError, "%s: a bone law must be a tuple of %d floats and 3 per layer (at most %d)",
                     who, BONE_LAW_FIXED, BONE_MAX_LAYERS);
        return -1;
    }
    double fixed[BONE_LAW_FIXED];
    for (Py_ssize_t i = 0; i < size; i++) {
        const double value = PyFloat_AsDouble(PyTuple_GET_ITEM(tuple, i));
        if (value == -1.0 && PyErr_Occurred()) return -1;
        if (i < BONE_LAW_FIXED)
            fixed[i] = value;
        else
            law->bounds[(i - BONE_LAW_FIXED) / 3][(i - BONE_LAW_FIXED) % 3] = value;
    }
    law->point_length = fixed[0];
    law->reference_feed_rate = fixed[1];
    law->exponent = fixed[2];
    law->reference_thrust = fixed[3];
    law->time_constant = fixed[4];
    law->linear_below = fixed[5];
    law->layers = (size - BONE_LAW_FIXED) / 3;
    return 0;
}

/* BoneThrust.engagement: Python's min(high, end) and max(low, start) (the first unless the second
 * is smaller, larger). */
static double bone_engagement(const BoneLaw *law, double depth) {
    if (depth <= 0.0) return 0.0;
    const double length = law->point_length, low = depth - length, high = depth;
    double total = 0.0;
    for (Py_ssize_t i = 0; i < law->layers; i++) {
        const double start = law->bounds[i][0], end = law->bounds[i][1], factor = law->bounds[i][2];
        const double overlap = (end < high ? end : high) - (start > low ? start : low);
        if (overlap > 0.0) total += factor * overlap / length;
    }
    return total;
}

/* BoneThrust.target with the thrust's scale. */
static double bone_target(const BoneLaw *law, double scale, double depth, double feed_velocity) {
    if (feed_velocity <= 0.0) return 0.0;
    const double engaged = bone_engagement(law, depth);
    if (engaged == 0.0) return 0.0;
    const double ratio = feed_velocity / law->reference_feed_rate;
    double rate_factor;
    if (ratio < law->linear_below)
        rate_factor = pow(law->linear_below, law->exponent) * ratio / law->linear_below;
    else
        rate_factor = pow(ratio, law->exponent);
    return scale * law->reference_thrust * rate_factor * engaged;
}

/* BoneThrust.update's lag: the force (N) after dt s from `force` towards `target`. */
static double bone_lag(const BoneLaw *law, double force, double target, double dt) {
    const double decay = exp(-dt / law->time_constant);
    return target + (force - target) * decay;
}

#endif
