/* The plants' control periods, compiled: the twins of realistic_plant.py's
 * `RealisticPlant.step_period_in_python` (`physics_period`) and of plant.py's
 * `MujocoPlant.step_period_in_python` (`ideal_period`), with simulation.bone_contact's
 * `BoneContact` as their tip force (models.bone's `BoneThrust` law: models/bone_law.h), built as
 * the extension quirobot_control.simulation._physics_kernel when a C compiler and Python's headers
 * are there (setup.py, CMakeLists.txt).
 *
 * Same operations in the same order on IEEE doubles, so the results are bit for bit the Python
 * laws' (test/control/simulation/test_physics_kernel.py, test_drive_array.py): built with
 * -ffp-contract=off (no fused multiply-adds), exp(), pow(), sqrt() and nearbyint() from the C
 * library Python's math and round() call. Nothing numpy sums (its BLAS's order) is summed here:
 * the skiving's direction comes from the plant (RealisticPlant._downhill). Why C: each physics
 * step (four a control period) is a dozen small laws on a few floats on the realistic plant, the
 * bone's thrust and a loop on the ideal one; interpreted, they were two fifths of an accuracy
 * sample's CPU and a tenth of `quirobot simulate`'s (bench/sim_speed.py --parts).
 *
 * The state stays where the Python keeps it, and is written where the Python writes it, as the
 * Python goes: the plants' numpy arrays (their `_kernel`'s, written through their buffers), the
 * bone contact's and the thrust law's attributes, the cutting's depth history (a list). What is
 * not arithmetic on those is called as the Python calls it: the drives' step (DriveArray.advance),
 * the brakes (RealisticPlant.follow_brakes, MujocoPlant._apply_brakes), the wrist gearbox
 * (wrist_motor_substeps), MuJoCo's mj_kinematics, mj_applyFT and mj_step. An exception from any
 * of them leaves the state as the Python would have left it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#include "../models/bone_law.h"

/* The plant's arrays (RealisticPlant._kernel[0]), in this order. */
enum {
    QPOS, QVEL, QFRC_APPLIED, DRIVE_POSITION, DRIVE_SPEED, MOTOR_ANGLE, MOTOR_SPEED, EFFORTS, SCREW,
    RAM, RAM_RATE, BIT, TIP, RIGID_TIP, EXTERNAL, TIP_FORCE, ARRAYS
};
static const Py_ssize_t ARRAY_LENGTH[ARRAYS] = {6, 6, 6, 6, 6, 6, 6, 6, 3, 2, 2, 3, 3, 3, 6, 3};
static const char *ARRAY_NAME[ARRAYS] = {
    "qpos", "qvel", "qfrc_applied", "drive position", "drive speed", "motor angle", "motor speed",
    "efforts", "screw", "ram", "ram rate", "bit", "tip", "rigid tip", "external", "tip force",
};

/* Its calls and objects (RealisticPlant._kernel[1]), in this order. */
enum {
    ADVANCE, FOLLOW_BRAKES, WRIST_MOTOR, MJ_KINEMATICS, MJ_APPLY_FT, MJ_STEP, MODEL, DATA, NO_TORQUE,
    BIT_BODY, TIMESTEP, MOTOR_SUBSTEPS, WRIST_CONSTANTS_3, WRIST_CONSTANTS_4, CALLS
};

/* Its constants (RealisticPlant._kernel[2]), in this order. */
enum {
    BRAKED_COULOMB_3, BRAKED_COULOMB_4, WRIST_COULOMB, SCREW_STIFFNESS, SCREW_AXES, RAM_K = SCREW_AXES + 9,
    RAM_M, RAM_C, SPINDLE_PERIOD, REGENERATIVE_STIFFNESS, SKIVING_COEFFICIENT, BIT_STIFFNESS,
    VIBRATION_REVOLUTIONS, CONSTANTS
};

/* realistic_plant.WRIST, its two-mass wrist joints (their constants come in _kernel's calls, in
 * this order). */
#define WRIST_FIRST 3
#define WRIST_LAST 4

static PyObject *S_advance, *S_brakes_engaged, *S_brakes, *S_drilling_floats, *S_downhill, *S_thrust_model,
    *S_depth_average, *S_depth_history, *S_engaged_once, *S_entry, *S_direction, *S_radius, *S_depth, *S_thrust, *S_force, *S_scale, *S_law, *S_kernel;

/* A thrust law's state and constants (BoneThrust), read once a period. */
typedef struct {
    PyObject *object;
    double force, scale;
    BoneLaw law;
} Thrust;

static int attribute_double(PyObject *owner, PyObject *name, double *out) {
    PyObject *value = PyObject_GetAttr(owner, name);
    if (value == NULL) return -1;
    *out = PyFloat_AsDouble(value);
    Py_DECREF(value);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* Three floats of a list or tuple (the contact's entry and direction, the drilling's). */
static int three_doubles(PyObject *sequence, double *out, const char *what) {
    PyObject *fast = PySequence_Fast(sequence, what);
    if (fast == NULL) return -1;
    if (PySequence_Fast_GET_SIZE(fast) != 3) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_TypeError, "physics_period: %s must hold 3 floats", what);
        return -1;
    }
    for (Py_ssize_t i = 0; i < 3; i++) {
        out[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
        if (out[i] == -1.0 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return 0;
}

/* Attribute `name` of `owner`, three floats (a list or a tuple). */
static int attribute_doubles(PyObject *owner, PyObject *name, double *out, const char *what) {
    PyObject *value = PyObject_GetAttr(owner, name);
    if (value == NULL) return -1;
    const int status = three_doubles(value, out, what);
    Py_DECREF(value);
    return status;
}

/* Attribute `name` of `owner`, None (*present 0) or a float (*present 1, its value). */
static int optional_double(PyObject *owner, PyObject *name, int *present, double *out) {
    PyObject *value = PyObject_GetAttr(owner, name);
    if (value == NULL) return -1;
    *present = value != Py_None;
    *out = *present ? PyFloat_AsDouble(value) : 0.0;
    Py_DECREF(value);
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

static int read_thrust(PyObject *object, Thrust *thrust) {
    thrust->object = object;
    if (attribute_double(object, S_force, &thrust->force) < 0 || attribute_double(object, S_scale, &thrust->scale) < 0)
        return -1;
    PyObject *law = PyObject_GetAttr(object, S_law);
    if (law == NULL) return -1;
    const int status = bone_law_read(law, &thrust->law, "physics_period");
    Py_DECREF(law);
    return status;
}

/* BoneThrust.update: the lag advanced by dt (its force written back); returns the force. */
static int thrust_update(Thrust *thrust, double dt, double depth, double feed_velocity, double *out) {
    const double target = bone_target(&thrust->law, thrust->scale, depth, feed_velocity);
    thrust->force = bone_lag(&thrust->law, thrust->force, target, dt);
    PyObject *value = PyFloat_FromDouble(thrust->force);
    if (value == NULL) return -1;
    const int status = PyObject_SetAttr(thrust->object, S_force, value);
    Py_DECREF(value);
    *out = thrust->force;
    return status;
}

/* Calls `function` with `count` arguments; the result is dropped (0) or -1 with the exception. */
static int call(PyObject *function, PyObject *const *arguments, size_t count) {
    PyObject *result = PyObject_Vectorcall(function, arguments, count, NULL);
    if (result == NULL) return -1;
    Py_DECREF(result);
    return 0;
}

static int set_float(PyObject *owner, PyObject *name, double value) {
    PyObject *number = PyFloat_FromDouble(value);
    if (number == NULL) return -1;
    const int status = PyObject_SetAttr(owner, name, number);
    Py_DECREF(number);
    return status;
}

/* The period's Python objects and their buffers. */
typedef struct {
    Py_buffer views[ARRAYS];
    int held;
    double *a[ARRAYS];
    PyObject *array_objects[ARRAYS];
    PyObject *calls[CALLS];
    double c[CONSTANTS];
} Plant;

static void release_views(Py_buffer *views, int *held) {
    for (int i = 0; i < *held; i++) PyBuffer_Release(&views[i]);
    *held = 0;
}

static void release(Plant *plant) { release_views(plant->views, &plant->held); }

/* The tuple `arrays`' `count` numpy arrays as writable C doubles, `lengths[i]` each: their objects,
 * buffers (views, `*held` of them: release_views) and data; -1 with a TypeError naming the array. */
static int open_arrays(PyObject *arrays, int count, const Py_ssize_t *lengths, const char *const *names,
                       Py_buffer *views, int *held, double **data, PyObject **objects) {
    *held = 0;
    for (int i = 0; i < count; i++) {
        Py_buffer *view = &views[i];
        objects[i] = PyTuple_GET_ITEM(arrays, i);
        if (PyObject_GetBuffer(objects[i], view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
            release_views(views, held);
            return -1;
        }
        (*held)++;
        const char *format = view->format == NULL ? "B" : view->format;
        if (view->itemsize != sizeof(double) || strcmp(format, "d") != 0 ||
            view->len != lengths[i] * (Py_ssize_t)sizeof(double)) {
            release_views(views, held);
            PyErr_Format(PyExc_TypeError, "physics kernel: %s must be %zd contiguous float64 values", names[i],
                         lengths[i]);
            return -1;
        }
        data[i] = view->buf;
    }
    return 0;
}

static int open_plant(PyObject *kernel, Plant *plant) {
    plant->held = 0;
    if (!PyTuple_Check(kernel) || PyTuple_GET_SIZE(kernel) != 3) {
        PyErr_SetString(PyExc_TypeError, "physics_period: the plant's _kernel must be (arrays, calls, constants)");
        return -1;
    }
    PyObject *arrays = PyTuple_GET_ITEM(kernel, 0), *calls = PyTuple_GET_ITEM(kernel, 1);
    PyObject *constants = PyTuple_GET_ITEM(kernel, 2);
    if (!PyTuple_Check(arrays) || PyTuple_GET_SIZE(arrays) != ARRAYS || !PyTuple_Check(calls) ||
        PyTuple_GET_SIZE(calls) != CALLS || !PyTuple_Check(constants) || PyTuple_GET_SIZE(constants) != CONSTANTS) {
        PyErr_Format(PyExc_TypeError, "physics_period: the plant's _kernel must hold %d arrays, %d calls, %d constants",
                     ARRAYS, CALLS, CONSTANTS);
        return -1;
    }
    if (open_arrays(arrays, ARRAYS, ARRAY_LENGTH, ARRAY_NAME, plant->views, &plant->held, plant->a,
                    plant->array_objects) < 0)
        return -1;
    for (int i = 0; i < CALLS; i++) plant->calls[i] = PyTuple_GET_ITEM(calls, i);
    for (int i = 0; i < CONSTANTS; i++) {
        plant->c[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(constants, i));
        if (plant->c[i] == -1.0 && PyErr_Occurred()) {
            release(plant);
            return -1;
        }
    }
    return 0;
}

/* The cutting's state (RealisticPlant._cutting's), None-able floats as a flag and a value. */
typedef struct {
    int drilling; /* drilling and thrust_model set */
    double entry[3], direction[3], downhill[3]; /* downhill: skiving's unit direction */
    Thrust thrust;
    PyObject *history; /* the depth history list (borrowed from the plant, kept alive by it) */
    int has_average;
    double average;
    int engaged_once;
} Cutting;

/* The bone contact's (BoneContact's). */
typedef struct {
    int present;
    double entry[3], direction[3], radius;
    int has_depth;
    double depth;
    Thrust thrust;
} Contact;

/* RealisticPlant._wrist_motor step of both wrist joints (_step_wrists), `braked` from follow_brakes. */
static int step_wrists(Plant *p, PyObject *braked, double *applied) {
    const double *efforts = p->a[EFFORTS], *qpos = p->a[QPOS], *qvel = p->a[QVEL];
    double *angle = p->a[MOTOR_ANGLE], *rate = p->a[MOTOR_SPEED];
    double new_angle[2], new_rate[2];
    for (int j = WRIST_FIRST; j <= WRIST_LAST; j++) {
        PyObject *held = PySequence_GetItem(braked, j);
        if (held == NULL) return -1;
        const int is_braked = PyObject_IsTrue(held);
        Py_DECREF(held);
        if (is_braked < 0) return -1;
        const double coulomb = is_braked ? p->c[j == WRIST_FIRST ? BRAKED_COULOMB_3 : BRAKED_COULOMB_4]
                                         : p->c[WRIST_COULOMB];
        PyObject *arguments[8] = {p->calls[j == WRIST_FIRST ? WRIST_CONSTANTS_3 : WRIST_CONSTANTS_4],
                                  p->calls[MOTOR_SUBSTEPS]};
        const double values[6] = {efforts[j], coulomb, qpos[j], qvel[j], angle[j], rate[j]};
        int status = 0;
        for (int k = 0; k < 6; k++) {
            arguments[2 + k] = PyFloat_FromDouble(values[k]);
            if (arguments[2 + k] == NULL) status = -1;
        }
        PyObject *result = status == 0 ? PyObject_Vectorcall(p->calls[WRIST_MOTOR], arguments, 8, NULL) : NULL;
        for (int k = 0; k < 6; k++) Py_XDECREF(arguments[2 + k]);
        if (result == NULL) return -1;
        double out[3];
        for (int k = 0; k < 3 && status == 0; k++) {
            PyObject *item = PySequence_GetItem(result, k);
            out[k] = item == NULL ? -1.0 : PyFloat_AsDouble(item);
            Py_XDECREF(item);
            if (out[k] == -1.0 && PyErr_Occurred()) status = -1;
        }
        Py_DECREF(result);
        if (status < 0) return -1;
        new_angle[j - WRIST_FIRST] = out[0];
        new_rate[j - WRIST_FIRST] = out[1];
        applied[j] = out[2];
    }
    for (int j = WRIST_FIRST; j <= WRIST_LAST; j++) { /* written after both, as the Python does */
        angle[j] = new_angle[j - WRIST_FIRST];
        rate[j] = new_rate[j - WRIST_FIRST];
    }
    return 0;
}

/* RealisticPlant._screw_deflections. */
static void screw_deflections(Plant *p) {
    const double stiffness = p->c[SCREW_STIFFNESS], *axes = &p->c[SCREW_AXES], *efforts = p->a[EFFORTS];
    double *screw = p->a[SCREW];
    double s0 = screw[0], s1 = screw[1], s2 = screw[2];
    for (int i = 0; i < 3; i++) {
        const double a0 = axes[3 * i], a1 = axes[3 * i + 1], a2 = axes[3 * i + 2];
        const double change = -efforts[i] / stiffness - (s0 * a0 + s1 * a1 + s2 * a2);
        s0 = s0 + a0 * change;
        s1 = s1 + a1 * change;
        s2 = s2 + a2 * change;
    }
    screw[0] = s0;
    screw[1] = s1;
    screw[2] = s2;
}

/* RealisticPlant.tip on the nominal machine, written into the plant's _tip. */
static void tip(Plant *p) {
    const double *t = p->a[RIGID_TIP], *s = p->a[SCREW], *r = p->a[RAM], *b = p->a[BIT];
    double *out = p->a[TIP];
    const double x = t[0] + (s[0] + r[0]) + b[0] + 0.0, y = t[1] + (s[1] + r[1]) + b[1] + 0.0;
    const double z = t[2] + (s[2] + 0.0) + b[2] + 0.0;
    out[0] = x;
    out[1] = y;
    out[2] = z;
}

/* BoneContact.__call__(h): the force (3,) into `force`, 1 if there is one (thrust > 0), 0 if none. */
static int contact_force(const double *t, PyObject *contact_object, Contact *contact, double h, double *force) {
    const double *e = contact->entry, *d = contact->direction;
    const double ox = t[0] - e[0], oy = t[1] - e[1], oz = t[2] - e[2];
    const double depth = ox * d[0] + oy * d[1] + oz * d[2];
    const double rx = ox - depth * d[0], ry = oy - depth * d[1], rz = oz - depth * d[2];
    double thrust;
    if (sqrt(rx * rx + ry * ry + rz * rz) > contact->radius) {
        contact->has_depth = 0;
        if (PyObject_SetAttr(contact_object, S_depth, Py_None) < 0) return -1;
        if (thrust_update(&contact->thrust, h, depth, 0.0, &thrust) < 0) return -1;
    } else {
        const double rate = contact->has_depth ? (depth - contact->depth) / h : 0.0;
        contact->has_depth = 1;
        contact->depth = depth;
        if (set_float(contact_object, S_depth, depth) < 0) return -1;
        if (thrust_update(&contact->thrust, h, depth, rate, &thrust) < 0) return -1;
    }
    if (!(thrust > 0.0)) return 0;
    force[0] = -thrust * d[0];
    force[1] = -thrust * d[1];
    force[2] = -thrust * d[2];
    return 1;
}

/* RealisticPlant._cutting: `force` (present: 1, or 0) in, the force out (the return: present or not). */
static int cutting(Plant *p, PyObject *owner, Cutting *cut, double h, int present, double *force) {
    if (!cut->drilling) return present;
    const double *e = cut->entry, *d = cut->direction;
    tip(p);
    const double *t = p->a[TIP];
    const double depth = (t[0] - e[0]) * d[0] + (t[1] - e[1]) * d[1] + (t[2] - e[2]) * d[2];
    const double point_length = cut->thrust.law.point_length;
    const double engaged = bone_engagement(&cut->thrust.law, depth);
    double fx = 0.0, fy = 0.0, fz = 0.0, thrust = 0.0;
    if (present) {
        fx = force[0];
        fy = force[1];
        fz = force[2];
        thrust = -fx * d[0] + -fy * d[1] + -fz * d[2];
    }
    double e0 = 0.0, e1 = 0.0, e2 = 0.0;
    const double spindle_period = p->c[SPINDLE_PERIOD];
    const double steps = nearbyint(spindle_period / h);
    const Py_ssize_t period_steps = steps < 1.0 ? 1 : (Py_ssize_t)steps;
    if (!cut->has_average) {
        cut->has_average = 1;
        cut->average = depth;
    }
    const double alpha = h / (p->c[VIBRATION_REVOLUTIONS] * spindle_period);
    cut->average += alpha * (depth - cut->average);
    if (set_float(owner, S_depth_average, cut->average) < 0) return -1;
    const double vibration = depth - cut->average;
    PyObject *value = PyFloat_FromDouble(vibration);
    if (value == NULL || PyList_Append(cut->history, value) < 0) {
        Py_XDECREF(value);
        return -1;
    }
    Py_DECREF(value);
    if (PyList_GET_SIZE(cut->history) > period_steps) {
        const double before = PyFloat_AsDouble(PyList_GET_ITEM(cut->history, 0));
        if (before == -1.0 && PyErr_Occurred()) return -1;
        if (PySequence_DelItem(cut->history, 0) < 0) return -1;
        if (engaged > 0.0 && thrust > 0.0) {
            const double regenerative = p->c[REGENERATIVE_STIFFNESS] * engaged * (vibration - before);
            const double along = -thrust > regenerative ? -thrust : regenerative; /* max(regenerative, -thrust) */
            e0 = e0 - along * d[0];
            e1 = e1 - along * d[1];
            e2 = e2 - along * d[2];
        }
    }
    if (0.0 < depth && depth < point_length && !cut->engaged_once) {
        const double scale = p->c[SKIVING_COEFFICIENT] * thrust, *down = cut->downhill;
        const double lateral[3] = {scale * down[0], scale * down[1], scale * down[2]};
        e0 = e0 + lateral[0];
        e1 = e1 + lateral[1];
        e2 = e2 + lateral[2];
        double *bit = p->a[BIT];
        for (int k = 0; k < 3; k++) bit[k] = lateral[k] / p->c[BIT_STIFFNESS];
    } else if (depth >= point_length && !cut->engaged_once) {
        cut->engaged_once = 1; /* the hole holds the tip where the entry left it */
        if (PyObject_SetAttr(owner, S_engaged_once, Py_True) < 0) return -1;
    }
    if (!present) {
        if (e0 != 0.0 || e1 != 0.0 || e2 != 0.0) {
            force[0] = e0;
            force[1] = e1;
            force[2] = e2;
            return 1;
        }
        return 0;
    }
    force[0] = fx + e0;
    force[1] = fy + e1;
    force[2] = fz + e2;
    return 1;
}

/* RealisticPlant._step_ram. */
static void step_ram(Plant *p, double h, int present, const double *force) {
    const double k = p->c[RAM_K], m = p->c[RAM_M], c = p->c[RAM_C];
    const double fx = present ? force[0] : 0.0, fy = present ? force[1] : 0.0;
    double *ram = p->a[RAM], *rate = p->a[RAM_RATE];
    const double x = ram[0], y = ram[1];
    double vx = rate[0], vy = rate[1];
    const double new_vx = vx + h * (fx - k * x - c * vx) / m, new_vy = vy + h * (fy - k * y - c * vy) / m;
    vx = new_vx;
    vy = new_vy;
    rate[0] = vx;
    rate[1] = vy;
    ram[0] = x + h * vx;
    ram[1] = y + h * vy;
}

/* What MujocoPlant.step works on: its generalized forces, the tip force's buffers, MuJoCo's calls. */
typedef struct {
    double *qfrc, *external, *tip_force;
    PyObject *model, *data, *tip_force_object, *no_torque, *tip_position, *bit_body, *external_object;
    PyObject *mj_apply_ft, *mj_step;
} Rigid;

/* MujocoPlant.step(applied, force). */
static int rigid_step(const Rigid *r, const double *applied, int present, const double *force) {
    for (int j = 0; j < 6; j++) r->qfrc[j] = applied[j];
    if (present) {
        for (int j = 0; j < 6; j++) r->external[j] = 0.0;
        for (int k = 0; k < 3; k++) r->tip_force[k] = force[k];
        PyObject *arguments[7] = {r->model,        r->data,     r->tip_force_object, r->no_torque,
                                  r->tip_position, r->bit_body, r->external_object};
        if (call(r->mj_apply_ft, arguments, 7) < 0) return -1;
        for (int j = 0; j < 6; j++) r->qfrc[j] = r->qfrc[j] + r->external[j];
    }
    PyObject *model_data[2] = {r->model, r->data};
    return call(r->mj_step, model_data, 2);
}

/* The realistic plant's Rigid. */
static Rigid realistic_rigid(const Plant *p) {
    const Rigid r = {
        p->a[QFRC_APPLIED],          p->a[EXTERNAL],          p->a[TIP_FORCE],   p->calls[MODEL],
        p->calls[DATA],              p->array_objects[TIP_FORCE], p->calls[NO_TORQUE], p->array_objects[RIGID_TIP],
        p->calls[BIT_BODY],          p->array_objects[EXTERNAL], p->calls[MJ_APPLY_FT], p->calls[MJ_STEP],
    };
    return r;
}

/* One physics step of the period (RealisticPlant.step_period_in_python's loop body). */
static int physics_step(Plant *p, PyObject *plant, PyObject *contact_object, Contact *contact, Cutting *cut,
                        double h) {
    const double *qpos = p->a[QPOS], *qvel = p->a[QVEL];
    double *position = p->a[DRIVE_POSITION], *speed = p->a[DRIVE_SPEED], *efforts = p->a[EFFORTS];
    for (int j = 0; j < 6; j++) {
        position[j] = qpos[j];
        speed[j] = qvel[j];
    }
    for (int j = WRIST_FIRST; j <= WRIST_LAST; j++) {
        position[j] = p->a[MOTOR_ANGLE][j];
        speed[j] = p->a[MOTOR_SPEED][j];
    }
    PyObject *advance[4] = {p->calls[TIMESTEP], p->array_objects[DRIVE_POSITION], p->array_objects[DRIVE_SPEED],
                            p->array_objects[EFFORTS]};
    if (call(p->calls[ADVANCE], advance, 4) < 0) return -1;
    double applied[6];
    for (int j = 0; j < 6; j++) applied[j] = efforts[j];
    PyObject *braked = PyObject_Vectorcall(p->calls[FOLLOW_BRAKES], NULL, 0, NULL);
    if (braked == NULL) return -1;
    const int wrists = step_wrists(p, braked, applied);
    Py_DECREF(braked);
    if (wrists < 0) return -1;
    screw_deflections(p);
    PyObject *model_data[2] = {p->calls[MODEL], p->calls[DATA]};
    if (call(p->calls[MJ_KINEMATICS], model_data, 2) < 0) return -1;
    double force[3] = {0.0, 0.0, 0.0};
    int present = 0;
    if (contact->present) {
        tip(p);
        present = contact_force(p->a[TIP], contact_object, contact, h, force);
        if (present < 0) return -1;
    }
    present = cutting(p, plant, cut, h, present, force);
    if (present < 0) return -1;
    step_ram(p, h, present, force);
    const Rigid rigid = realistic_rigid(p);
    return rigid_step(&rigid, applied, present, force);
}

static int read_contact(PyObject *object, Contact *contact) {
    contact->present = object != Py_None;
    if (!contact->present) return 0;
    if (attribute_doubles(object, S_entry, contact->entry, "the contact's _entry") < 0 ||
        attribute_doubles(object, S_direction, contact->direction, "the contact's _direction") < 0 ||
        attribute_double(object, S_radius, &contact->radius) < 0 ||
        optional_double(object, S_depth, &contact->has_depth, &contact->depth) < 0)
        return -1;
    PyObject *thrust = PyObject_GetAttr(object, S_thrust);
    if (thrust == NULL) return -1;
    const int status = read_thrust(thrust, &contact->thrust);
    Py_DECREF(thrust); /* the contact keeps it */
    return status;
}

/* The cutting's state; `thrust_model` and `history` stay owned by the plant. */
static int read_cutting(PyObject *plant, Cutting *cut) {
    cut->drilling = 0;
    cut->history = NULL;
    PyObject *floats = PyObject_GetAttr(plant, S_drilling_floats);
    if (floats == NULL) return -1;
    PyObject *model = PyObject_GetAttr(plant, S_thrust_model);
    if (model == NULL) {
        Py_DECREF(floats);
        return -1;
    }
    int status = 0;
    if (floats != Py_None && model != Py_None) {
        cut->drilling = 1;
        if (!PyTuple_Check(floats) || PyTuple_GET_SIZE(floats) != 2) {
            PyErr_SetString(PyExc_TypeError, "physics_period: the plant's _drilling_floats must be (entry, direction)");
            status = -1;
        } else {
            status = three_doubles(PyTuple_GET_ITEM(floats, 0), cut->entry, "the drilling's entry") < 0 ||
                             three_doubles(PyTuple_GET_ITEM(floats, 1), cut->direction, "the drilling's direction") < 0 ||
                             attribute_doubles(plant, S_downhill, cut->downhill, "the plant's _downhill") < 0 ||
                             read_thrust(model, &cut->thrust) < 0
                         ? -1
                         : 0;
        }
    }
    Py_DECREF(floats);
    Py_DECREF(model);
    if (status < 0 || !cut->drilling) return status;
    PyObject *history = PyObject_GetAttr(plant, S_depth_history);
    if (history == NULL) return -1;
    Py_DECREF(history); /* the plant keeps it */
    if (!PyList_Check(history)) {
        PyErr_SetString(PyExc_TypeError, "physics_period: the plant's _depth_history must be a list");
        return -1;
    }
    cut->history = history;
    if (optional_double(plant, S_depth_average, &cut->has_average, &cut->average) < 0) return -1;
    PyObject *engaged = PyObject_GetAttr(plant, S_engaged_once);
    if (engaged == NULL) return -1;
    cut->engaged_once = PyObject_IsTrue(engaged);
    Py_DECREF(engaged);
    return cut->engaged_once < 0 ? -1 : 0;
}

/* (plant, contact, substeps) -> the plant's efforts array: RealisticPlant.step_period_in_python on
 * the nominal machine, `contact` the BoneContact on this plant or None. */
static PyObject *physics_period(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "physics_period takes 3 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *plant_object = args[0], *contact_object = args[1];
    const long substeps = PyLong_AsLong(args[2]);
    if (substeps == -1 && PyErr_Occurred()) return NULL;
    PyObject *kernel = PyObject_GetAttr(plant_object, S_kernel);
    if (kernel == NULL) return NULL;
    Plant plant;
    Contact contact;
    Cutting cut;
    int status = open_plant(kernel, &plant);
    if (status == 0) {
        const double h = PyFloat_AsDouble(plant.calls[TIMESTEP]);
        status = (h == -1.0 && PyErr_Occurred()) || read_contact(contact_object, &contact) < 0 ||
                         read_cutting(plant_object, &cut) < 0
                     ? -1
                     : 0;
        for (long step = 0; step < substeps && status == 0; step++)
            status = physics_step(&plant, plant_object, contact_object, &contact, &cut, h);
        release(&plant);
    }
    PyObject *efforts = status == 0 ? PyTuple_GET_ITEM(PyTuple_GET_ITEM(kernel, 0), EFFORTS) : NULL;
    Py_XINCREF(efforts);
    Py_DECREF(kernel);
    return efforts;
}

/* MujocoPlant._kernel's arrays and calls, in this order. */
enum { I_QPOS, I_QVEL, I_QFRC_APPLIED, I_EFFORTS, I_TIP, I_EXTERNAL, I_TIP_FORCE, IDEAL_ARRAYS };
static const Py_ssize_t IDEAL_LENGTH[IDEAL_ARRAYS] = {6, 6, 6, 6, 3, 6, 3};
static const char *IDEAL_NAME[IDEAL_ARRAYS] = {"qpos", "qvel", "qfrc_applied", "efforts", "tip", "external",
                                               "tip force"};
enum {
    I_MJ_KINEMATICS, I_MJ_APPLY_FT, I_MJ_STEP, I_MODEL, I_DATA, I_NO_TORQUE, I_BIT_BODY, I_TIMESTEP,
    I_APPLY_BRAKES, IDEAL_CALLS
};

/* One physics step of MujocoPlant.step_period_in_python; `last`: the brakes applied (a new
 * reference replaces it when they change). */
static int ideal_step(double **a, PyObject **objects, PyObject *const *calls, const Rigid *rigid, PyObject *advance,
                      PyObject *brakes_engaged, PyObject *array, PyObject **last, PyObject *contact_object,
                      Contact *contact, double h) {
    PyObject *arguments[4] = {calls[I_TIMESTEP], objects[I_QPOS], objects[I_QVEL], objects[I_EFFORTS]};
    if (call(advance, arguments, 4) < 0) return -1;
    PyObject *engaged = PyObject_Vectorcall(brakes_engaged, NULL, 0, NULL);
    if (engaged == NULL) return -1;
    const int changed = PyObject_RichCompareBool(engaged, *last, Py_NE);
    PyObject *apply[2] = {engaged, array};
    if (changed < 0 || (changed && call(calls[I_APPLY_BRAKES], apply, 2) < 0)) {
        Py_DECREF(engaged);
        return -1;
    }
    Py_SETREF(*last, engaged);
    double force[3] = {0.0, 0.0, 0.0};
    int present = 0;
    if (contact->present) {
        PyObject *model_data[2] = {calls[I_MODEL], calls[I_DATA]};
        if (call(calls[I_MJ_KINEMATICS], model_data, 2) < 0) return -1;
        present = contact_force(a[I_TIP], contact_object, contact, h, force);
        if (present < 0) return -1;
    }
    return rigid_step(rigid, a[I_EFFORTS], present, force);
}

/* (plant, array, contact, substeps) -> the plant's efforts array: MujocoPlant.step_period_in_python
 * with the DriveArray `array`, `contact` the BoneContact on this plant or None. */
static PyObject *ideal_period(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "ideal_period takes 4 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *plant = args[0], *array = args[1], *contact_object = args[2];
    const long substeps = PyLong_AsLong(args[3]);
    if (substeps == -1 && PyErr_Occurred()) return NULL;
    PyObject *kernel = PyObject_GetAttr(plant, S_kernel);
    if (kernel == NULL) return NULL;
    if (!PyTuple_Check(kernel) || PyTuple_GET_SIZE(kernel) != 2 || !PyTuple_Check(PyTuple_GET_ITEM(kernel, 0)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(kernel, 0)) != IDEAL_ARRAYS || !PyTuple_Check(PyTuple_GET_ITEM(kernel, 1)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(kernel, 1)) != IDEAL_CALLS) {
        Py_DECREF(kernel);
        PyErr_Format(PyExc_TypeError, "ideal_period: the plant's _kernel must be (%d arrays, %d calls)", IDEAL_ARRAYS,
                     IDEAL_CALLS);
        return NULL;
    }
    Py_buffer views[IDEAL_ARRAYS];
    double *a[IDEAL_ARRAYS];
    PyObject *objects[IDEAL_ARRAYS];
    int held = 0;
    PyObject *const *calls = &PyTuple_GET_ITEM(PyTuple_GET_ITEM(kernel, 1), 0);
    if (open_arrays(PyTuple_GET_ITEM(kernel, 0), IDEAL_ARRAYS, IDEAL_LENGTH, IDEAL_NAME, views, &held, a, objects) < 0) {
        Py_DECREF(kernel);
        return NULL;
    }
    const Rigid rigid = {
        a[I_QFRC_APPLIED], a[I_EXTERNAL], a[I_TIP_FORCE], calls[I_MODEL], calls[I_DATA], objects[I_TIP_FORCE],
        calls[I_NO_TORQUE], objects[I_TIP], calls[I_BIT_BODY], objects[I_EXTERNAL], calls[I_MJ_APPLY_FT],
        calls[I_MJ_STEP],
    };
    Contact contact;
    const double h = PyFloat_AsDouble(calls[I_TIMESTEP]);
    PyObject *advance = PyObject_GetAttr(array, S_advance);
    PyObject *brakes_engaged = advance == NULL ? NULL : PyObject_GetAttr(array, S_brakes_engaged);
    PyObject *last = brakes_engaged == NULL ? NULL : PyObject_GetAttr(plant, S_brakes);
    int status = last == NULL || (h == -1.0 && PyErr_Occurred()) || read_contact(contact_object, &contact) < 0 ? -1 : 0;
    for (long step = 0; step < substeps && status == 0; step++)
        status = ideal_step(a, objects, calls, &rigid, advance, brakes_engaged, array, &last, contact_object,
                            &contact, h);
    release_views(views, &held);
    Py_XDECREF(advance);
    Py_XDECREF(brakes_engaged);
    Py_XDECREF(last);
    PyObject *efforts = status == 0 ? objects[I_EFFORTS] : NULL;
    Py_XINCREF(efforts);
    Py_DECREF(kernel);
    return efforts;
}

/* --- The encoders' latch (RealisticPlant.sense after the drives' sample) ---------------------------
 * RealisticPlant.latch_in_python's loop, RealisticDrive.latch of each drive, compiled: the same
 * attributes read and written in the same order, the same methods called (the inner drive's
 * state and command_current: its faults and state machine stay Python's), DualLoopFeedback.update
 * on its attributes. round(counts) * load_resolution is nearbyint(counts) * load_resolution: a
 * finite double's nearest integer is a double, and Python's int * float converts it back exactly
 * (any magnitude); a non-finite count raises as round() does (PyLong_FromDouble's errors). */

static PyObject *S_drives, *S_latch_draws, *S_load_position, *S_queue, *S_delay_periods, *S_inner, *S_state,
    *S_command_current, *S_encoder, *S_resolution, *S_position, *S_noise, *S_latched, *S_draws, *S_load_resolution,
    *S_dual_loop, *S_difference, *S_gain, *FAULT;

/* The attribute names and DriveState.FAULT, at the first latch (-1 with the exception). */
static int latch_names(void) {
    const struct {
        PyObject **name;
        const char *text;
    } names[] = {
        {&S_drives, "drives"},
        {&S_latch_draws, "_latch_draws"},
        {&S_load_position, "load_position"},
        {&S_queue, "_queue"},
        {&S_delay_periods, "delay_periods"},
        {&S_inner, "inner"},
        {&S_state, "state"},
        {&S_command_current, "command_current"},
        {&S_encoder, "encoder"},
        {&S_resolution, "resolution"},
        {&S_position, "position"},
        {&S_noise, "noise"},
        {&S_latched, "_position"},
        {&S_draws, "draws"},
        {&S_load_resolution, "load_resolution"},
        {&S_dual_loop, "dual_loop"},
        {&S_difference, "difference"},
        {&S_gain, "gain"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (*names[i].name == NULL && (*names[i].name = PyUnicode_InternFromString(names[i].text)) == NULL) return -1;
    }
    PyObject *interface = PyImport_ImportModule("quirobot_control.drives.interface");
    PyObject *states = interface == NULL ? NULL : PyObject_GetAttrString(interface, "DriveState");
    FAULT = states == NULL ? NULL : PyObject_GetAttrString(states, "FAULT");
    Py_XDECREF(states);
    Py_XDECREF(interface);
    return FAULT == NULL ? -1 : 0;
}

/* normals[first + k] of the latch's slice normals[first:first + draws] (IndexError past it, as the
 * Python's slice has it). */
static int normal(PyObject *normals, Py_ssize_t first, Py_ssize_t draws, Py_ssize_t k, double *out) {
    if (k >= draws || first + k >= PyList_GET_SIZE(normals)) {
        PyErr_SetString(PyExc_IndexError, "list index out of range");
        return -1;
    }
    *out = PyFloat_AsDouble(PyList_GET_ITEM(normals, first + k));
    return (*out == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

/* Whether `value` (an attribute: the drive's delay or draws) compares `op` to `than`. */
static int compare_size(PyObject *value, Py_ssize_t than, int op) {
    PyObject *size = PyLong_FromSsize_t(than);
    if (size == NULL) return -1;
    const int result = PyObject_RichCompareBool(value, size, op);
    Py_DECREF(size);
    return result;
}

/* RealisticDrive.latch's command delay: the queue's oldest command reaches the inner drive once
 * `delay_periods` are queued, unless the drive is in FAULT (it refuses it). */
static int deliver_queued(PyObject *drive, PyObject *inner) {
    PyObject *queue = PyObject_GetAttr(drive, S_queue);
    if (queue == NULL) return -1;
    int ready = PyObject_IsTrue(queue);
    if (ready > 0) {
        PyObject *delay = PyObject_GetAttr(drive, S_delay_periods);
        const Py_ssize_t length = delay == NULL ? -1 : PyObject_Size(queue);
        ready = length < 0 ? -1 : compare_size(delay, length, Py_LE); /* len(queue) >= delay */
        Py_XDECREF(delay);
    }
    PyObject *value = NULL;
    if (ready > 0) {
        if (PyList_CheckExact(queue) && PyList_GET_SIZE(queue) > 0) { /* list.pop(0) */
            value = PyList_GET_ITEM(queue, 0);
            Py_INCREF(value);
            if (PyList_SetSlice(queue, 0, 1, NULL) < 0) Py_CLEAR(value);
        } else {
            PyObject *zero = PyLong_FromLong(0);
            value = zero == NULL ? NULL : PyObject_CallMethod(queue, "pop", "O", zero);
            Py_XDECREF(zero);
        }
        if (value == NULL) ready = -1;
    }
    Py_DECREF(queue);
    if (ready <= 0) return ready;
    PyObject *state = PyObject_GetAttr(inner, S_state);
    int status = state == NULL ? -1 : 0;
    if (state != NULL && state != FAULT) { /* a fault refuses it; the loop reads the fault */
        PyObject *result = PyObject_CallMethodOneArg(inner, S_command_current, value);
        status = result == NULL ? -1 : 0;
        Py_XDECREF(result);
    }
    Py_XDECREF(state);
    Py_DECREF(value);
    return status;
}

/* DualLoopFeedback.update(motor, load) on `dual_loop`'s difference and gain; the blend out. */
static int dual_loop_update(PyObject *dual_loop, double motor, double load, double *out) {
    PyObject *previous = PyObject_GetAttr(dual_loop, S_difference);
    if (previous == NULL) return -1;
    double difference;
    if (previous == Py_None) {
        difference = load - motor;
    } else {
        double gain;
        difference = PyFloat_AsDouble(previous);
        if ((difference == -1.0 && PyErr_Occurred()) || attribute_double(dual_loop, S_gain, &gain) < 0) {
            Py_DECREF(previous);
            return -1;
        }
        difference = difference + gain * ((load - motor) - difference);
    }
    Py_DECREF(previous);
    if (set_float(dual_loop, S_difference, difference) < 0) return -1;
    *out = motor + difference;
    return 0;
}

/* `drive.load_position = load` then drive.latch(normals[first:first + draws]). */
static int latch_drive(PyObject *drive, double load, PyObject *normals, Py_ssize_t first, Py_ssize_t draws) {
    if (set_float(drive, S_load_position, load) < 0) return -1;
    PyObject *inner = PyObject_GetAttr(drive, S_inner);
    if (inner == NULL) return -1;
    double resolution, position, noise, n0, n1, load_resolution, blended;
    PyObject *encoder = NULL;
    int status = deliver_queued(drive, inner);
    if (status == 0) encoder = PyObject_GetAttr(inner, S_encoder);
    status = encoder == NULL || attribute_double(encoder, S_resolution, &resolution) < 0 ||
                     attribute_double(inner, S_position, &position) < 0 || attribute_double(drive, S_noise, &noise) < 0 ||
                     normal(normals, first, draws, 0, &n0) < 0
                 ? -1
                 : 0;
    Py_XDECREF(encoder);
    Py_DECREF(inner);
    if (status < 0) return -1;
    const double motor = position + noise * resolution * n0;
    if (set_float(drive, S_latched, motor) < 0) return -1;
    PyObject *count = PyObject_GetAttr(drive, S_draws);
    const int blend = count == NULL ? -1 : compare_size(count, 2, Py_EQ);
    Py_XDECREF(count);
    if (blend <= 0) return blend;
    if (attribute_double(drive, S_load_resolution, &load_resolution) < 0 || normal(normals, first, draws, 1, &n1) < 0)
        return -1;
    if (load_resolution == 0.0) {
        PyErr_SetString(PyExc_ZeroDivisionError, "float division by zero");
        return -1;
    }
    const double counts = load / load_resolution + noise * n1;
    if (!isfinite(counts)) { /* round()'s error */
        PyObject *rounded = PyLong_FromDouble(counts);
        Py_XDECREF(rounded);
        return -1;
    }
    PyObject *dual_loop = PyObject_GetAttr(drive, S_dual_loop);
    if (dual_loop == NULL) return -1;
    status = dual_loop_update(dual_loop, motor, nearbyint(counts) * load_resolution, &blended);
    Py_DECREF(dual_loop);
    return status < 0 ? -1 : set_float(drive, S_latched, blended);
}

/* (plant, normals) -> None: RealisticPlant.latch_in_python(normals), compiled; normals: the list
 * of every drive's standard normal draws (RealisticPlant.sense draws them). */
static PyObject *latch_drives(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "latch_drives takes 2 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *plant = args[0], *normals = args[1];
    if (!PyList_Check(normals)) {
        PyErr_SetString(PyExc_TypeError, "latch_drives: normals must be a list of floats");
        return NULL;
    }
    if (FAULT == NULL && latch_names() < 0) return NULL;
    /* The load positions as the Python's qpos.tolist() takes them: before any drive's latch. */
    PyObject *kernel = PyObject_GetAttr(plant, S_kernel);
    if (kernel == NULL) return NULL;
    double qpos[6];
    Py_buffer view;
    int status = -1;
    if (!PyTuple_Check(kernel) || PyTuple_GET_SIZE(kernel) != 3 || !PyTuple_Check(PyTuple_GET_ITEM(kernel, 0)) ||
        PyTuple_GET_SIZE(PyTuple_GET_ITEM(kernel, 0)) != ARRAYS) {
        PyErr_SetString(PyExc_TypeError, "latch_drives: the plant's _kernel must be (arrays, calls, constants)");
    } else if (PyObject_GetBuffer(PyTuple_GET_ITEM(PyTuple_GET_ITEM(kernel, 0), QPOS), &view,
                                  PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) == 0) {
        const char *format = view.format == NULL ? "B" : view.format;
        if (view.itemsize != sizeof(double) || strcmp(format, "d") != 0 || view.len != (Py_ssize_t)sizeof(qpos)) {
            PyErr_SetString(PyExc_TypeError, "latch_drives: qpos must be 6 contiguous float64 values");
        } else {
            memcpy(qpos, view.buf, sizeof(qpos));
            status = 0;
        }
        PyBuffer_Release(&view);
    }
    Py_DECREF(kernel);
    if (status < 0) return NULL;
    PyObject *drives = PyObject_GetAttr(plant, S_drives);
    PyObject *fast_drives = drives == NULL ? NULL : PySequence_Fast(drives, "latch_drives: the plant's drives");
    Py_XDECREF(drives);
    if (fast_drives == NULL) return NULL;
    PyObject *draws = PyObject_GetAttr(plant, S_latch_draws);
    PyObject *fast_draws = draws == NULL ? NULL : PySequence_Fast(draws, "latch_drives: the plant's _latch_draws");
    Py_XDECREF(draws);
    if (fast_draws == NULL) {
        Py_DECREF(fast_drives);
        return NULL;
    }
    const Py_ssize_t count = PySequence_Fast_GET_SIZE(fast_drives);
    Py_ssize_t shortest = count < 6 ? count : 6;
    if (PySequence_Fast_GET_SIZE(fast_draws) < shortest) shortest = PySequence_Fast_GET_SIZE(fast_draws);
    Py_ssize_t first = 0;
    for (Py_ssize_t i = 0; i < shortest && status == 0; i++) {
        const Py_ssize_t taken = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(fast_draws, i));
        PyObject *drive = PySequence_Fast_GET_ITEM(fast_drives, i);
        Py_INCREF(drive);
        status = (taken == -1 && PyErr_Occurred()) || latch_drive(drive, qpos[i], normals, first, taken) < 0 ? -1 : 0;
        Py_DECREF(drive);
        first += taken;
    }
    if (status == 0 && (count != 6 || PySequence_Fast_GET_SIZE(fast_draws) != 6)) { /* zip(strict=True) */
        PyErr_SetString(PyExc_ValueError, "latch_drives: the plant's drives, qpos and _latch_draws differ in length");
        status = -1;
    }
    Py_DECREF(fast_draws);
    Py_DECREF(fast_drives);
    if (status < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"ideal_period", (PyCFunction)(void (*)(void))ideal_period, METH_FASTCALL,
     "plant.py's MujocoPlant.step_period_in_python with a BoneContact or no tip force, compiled (the same "
     "numbers bit for bit)."},
    {"physics_period", (PyCFunction)(void (*)(void))physics_period, METH_FASTCALL,
     "realistic_plant's step_period_in_python on the nominal machine with a BoneContact or none, compiled "
     "(same arguments but the drives, same results bit for bit)."},
    {"latch_drives", (PyCFunction)(void (*)(void))latch_drives, METH_FASTCALL,
     "realistic_plant's latch_in_python(normals) of the plant, compiled (same side effects, bit for bit)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_physics_kernel",
    "The plants' control periods and the realistic plant's encoders' latch, compiled (physics_kernel.c).", -1,
    methods,
};

#define INTERN(name, text)                                 \
    do {                                                   \
        name = PyUnicode_InternFromString(text);           \
        if (name == NULL) return NULL;                     \
    } while (0)

PyMODINIT_FUNC PyInit__physics_kernel(void) {
    INTERN(S_advance, "advance");
    INTERN(S_brakes_engaged, "brakes_engaged");
    INTERN(S_brakes, "_brakes");
    INTERN(S_drilling_floats, "_drilling_floats");
    INTERN(S_downhill, "_downhill");
    INTERN(S_thrust_model, "thrust_model");
    INTERN(S_depth_average, "_depth_average");
    INTERN(S_depth_history, "_depth_history");
    INTERN(S_engaged_once, "_engaged_once");
    INTERN(S_entry, "_entry");
    INTERN(S_direction, "_direction");
    INTERN(S_radius, "radius");
    INTERN(S_depth, "_depth");
    INTERN(S_thrust, "thrust");
    INTERN(S_force, "force");
    INTERN(S_scale, "scale");
    INTERN(S_law, "law");
    INTERN(S_kernel, "_kernel");
    return PyModule_Create(&module);
}
