/* headcast.xr's native frame helper: one frame's OpenXR calls and its TrackingFrame in one call.
 *
 * XRSession's frame is ~18 runtime calls (wait, poll event, begin, sync, 5 locates, 8 state reads,
 * end) and a TrackingFrame of five Poses and a Controls. Run from Python right after xrWaitFrame's
 * sleep, every call and every object built is cache-cold and costs several times its warm cost;
 * here the calls and the objects are one call. The calls go to the runtime's own entry points
 * (xrGetInstanceProcAddr) on the structs the session built once, so the same code runs a
 * headset's runtime and the mock one. The objects are the session's own frozen dataclasses,
 * filled at their slot descriptors' offsets (what object.__setattr__ in their __init__ does, with no call per field), with the
 * values and validity rules of session.py's _pose and _controls: the pure-Python path and this
 * one give equal frames, float for float. A failing step raises Step(step, XrResult, frame) and
 * the session raises the typed error the ctypes path raises for that call.
 *
 * A headless session (XR_MND_headless) makes no frame calls at all: the session paces itself and
 * its step is one event poll, then sync and locates at the runtime's now (CLOCK_MONOTONIC through
 * xrConvertTimespecTimeToTimeKHR, or the monotonic clock plus the offset the session learnt from
 * its state events when the runtime offers no conversion).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <math.h>
#include <openxr/openxr.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#define HAVE_PACER 1 /* clock_nanosleep(TIMER_ABSTIME) and PR_SET_TIMERSLACK: elsewhere pacing.Pacer paces */
#endif

enum { NLOCATE = 5, NSTATE = 8 };
enum { NPOSE_FIELDS = 6, NCONTROLS_FIELDS = 8, NFRAME_FIELDS = 11, NVALUES = 18 };

/* Steps, as the session maps them to "waiting for a frame", "locating the tracked devices", ... */
enum { FF_DONE = 0, FF_WAIT, FF_EVENT, FF_BEGIN, FF_SYNC, FF_LOCATE, FF_STATES, FF_END, FF_TIME };

/* XR_KHR_convert_timespec_time's conversion (the 1.0.20 headers declare it only with XR_USE_TIMESPEC). */
typedef XrResult(XRAPI_PTR *ConvertTimespec)(XrInstance, const struct timespec *, XrTime *);

/* The session's reads, in this order: trigger L/R, squeeze L/R (float), move, turn (vector2f),
 * jump, menu (boolean). Mirrored field for field by fastframe.FrameContext (its size is checked). */
typedef struct {
    PFN_xrPollEvent poll_event;
    PFN_xrWaitFrame wait_frame;
    PFN_xrBeginFrame begin_frame;
    PFN_xrEndFrame end_frame;
    PFN_xrSyncActions sync_actions;
    PFN_xrLocateSpace locate_space;
    PFN_xrGetActionStateFloat get_state[NSTATE]; /* each read's own entry point, cast to one type */
    XrInstance instance;
    XrSession session;
    const XrFrameWaitInfo *wait_info;
    XrFrameState *frame_state;
    const XrFrameBeginInfo *begin_info;
    XrFrameEndInfo *end_info;
    const XrActionsSyncInfo *sync_info;
    XrEventDataBuffer *event;
    XrSpace space[NLOCATE]; /* head (VIEW), left aim, left grip, right aim, right grip */
    XrSpace base;
    XrSpaceLocation *location[NLOCATE];
    const XrActionStateGetInfo *state_info[NSTATE];
    void *state[NSTATE];
    ConvertTimespec convert_time; /* NULL: the runtime offers no conversion (headless sessions only) */
    int32_t result;
} Calls;

/* ---- the runtime calls (no Python: they run without the GIL) ---- */

/* Where a call's time goes, when the session asks (set_timing(True); timings() reads the last call's):
 * the runtime's own calls, by kind, and the whole C call. Off, nothing is read (ns is NULL). */
enum { T_OTHER = 0, T_SYNC, T_LOCATE, T_STATES, T_WHOLE, NTIMES };

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int failed(Calls *c, int step, XrResult r) {
    c->result = r;
    return step;
}

/* Qualified successes (SESSION_NOT_FOCUSED, SESSION_LOSS_PENDING) go on, as in the ctypes path.
 * ns (or NULL): the runtime's time in sync, the five locates and the eight reads is added there. */
static int calls_poll(Calls *c, XrTime time, int64_t *ns) {
    int64_t t0 = ns ? mono_ns() : 0;
    XrResult r = c->sync_actions(c->session, c->sync_info);
    if (r < 0) return failed(c, FF_SYNC, r);
    int64_t t1 = ns ? mono_ns() : 0;
    for (int i = 0; i < NLOCATE; i++) {
        r = c->locate_space(c->space[i], c->base, time, c->location[i]);
        if (r < 0) return failed(c, FF_LOCATE, r);
    }
    int64_t t2 = ns ? mono_ns() : 0;
    for (int i = 0; i < NSTATE; i++) {
        r = c->get_state[i](c->session, c->state_info[i], (XrActionStateFloat *)c->state[i]);
        if (r < 0) return failed(c, FF_STATES, r);
    }
    if (ns) {
        int64_t t3 = mono_ns();
        ns[T_SYNC] += t1 - t0, ns[T_LOCATE] += t2 - t1, ns[T_STATES] += t3 - t2;
    }
    return FF_DONE;
}

/* The runtime's now: CLOCK_MONOTONIC converted by the runtime, else plus the session's offset. */
static int calls_now(Calls *c, int64_t offset, XrTime *now) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (!c->convert_time) {
        *now = (XrTime)ts.tv_sec * 1000000000LL + ts.tv_nsec + offset;
        return FF_DONE;
    }
    XrResult r = c->convert_time(c->instance, &ts, now);
    return r < 0 ? failed(c, FF_TIME, r) : FF_DONE;
}

/* A headless step: the runtime's now, one event poll (a pending event stops it there, FF_EVENT, as
 * in calls_frame: the session handles the events, then polls at that now), sync and locate at now.
 * The clock is read first, as xrWaitFrame reads it before the frame's events: what changed by then
 * is this frame's. No xrWaitFrame/xrBeginFrame/xrEndFrame: the spec's headless session does not
 * call them, and a runtime may refuse them (Monado's xrBeginFrame). */
static int calls_step(Calls *c, int64_t offset, XrTime *now, int64_t *ns) {
    int64_t t0 = ns ? mono_ns() : 0;
    int step = calls_now(c, offset, now);
    if (step) return step;
    c->event->type = XR_TYPE_EVENT_DATA_BUFFER;
    c->event->next = NULL;
    XrResult r = c->poll_event(c->instance, c->event);
    if (ns) ns[T_OTHER] += mono_ns() - t0;
    if (r != XR_EVENT_UNAVAILABLE) return failed(c, FF_EVENT, r);
    return calls_poll(c, *now, ns);
}

/* Begin the waited frame, poll at its predicted display time, end it with no layers. */
static int calls_run(Calls *c, int64_t *ns) {
    int64_t t0 = ns ? mono_ns() : 0;
    XrResult r = c->begin_frame(c->session, c->begin_info); /* FRAME_DISCARDED is a success */
    if (ns) ns[T_OTHER] += mono_ns() - t0;
    if (r < 0) return failed(c, FF_BEGIN, r);
    XrTime time = c->frame_state->predictedDisplayTime;
    int step = calls_poll(c, time, ns);
    if (step) return step;
    c->end_info->displayTime = time;
    int64_t t1 = ns ? mono_ns() : 0;
    r = c->end_frame(c->session, c->end_info);
    if (ns) ns[T_OTHER] += mono_ns() - t1;
    if (r < 0) return failed(c, FF_END, r);
    return FF_DONE;
}

/* Wait, then one event poll: events that arrived during the wait describe this frame. A pending
 * event stops the frame there (FF_EVENT, the event in the buffer): the session handles it and the
 * rest of the queue, then calls run() if the session still runs. */
static int calls_frame(Calls *c, int64_t *ns) {
    XrResult r = c->wait_frame(c->session, c->wait_info, c->frame_state);
    if (r < 0) return failed(c, FF_WAIT, r);
    int64_t t0 = ns ? mono_ns() : 0; /* the wait is the runtime's pacing, not counted */
    c->event->type = XR_TYPE_EVENT_DATA_BUFFER; /* the runtime overwrites the header: reset it */
    c->event->next = NULL;
    r = c->poll_event(c->instance, c->event);
    if (ns) ns[T_OTHER] += mono_ns() - t0;
    if (r != XR_EVENT_UNAVAILABLE) return failed(c, FF_EVENT, r);
    return calls_run(c, ns);
}

/* ---- the pacer: pacing.Pacer in C (Linux) ----
 *
 * The same deadlines, lateness ring, quantile and margins as pacing.Pacer (its constants are given
 * by pacing.py at construction: one source), so that a headless frame is one call: FrameCalls.paced()
 * sleeps to the deadline less the margin (clock_nanosleep, TIMER_ABSTIME, without the GIL), learns
 * the oversleep, spins when asked, and makes the step, with no Python between the wake-up and the
 * runtime's calls (right after the sleep each Python call costs microseconds of cold caches).
 * The pacer is the session's frame thread's: its state is changed without the GIL, by that thread. */
#ifdef HAVE_PACER
#define NS_PER_S 1000000000LL

typedef struct {
    PyObject_HEAD
    double rate_hz, quantile, spin_share, max_lead_share;
    long long period_ns, margin_ns, min_margin_ns, slack_ns, timer_slack_ns, max_lag, next, woke_ns;
    int has_next, spin, slack, timer_slack_set, window, resort, nlate, at, fresh;
    unsigned long slack_thread;
    int slack_thread_known;
    int64_t *late, *sorted; /* the ring of the last `window` oversleeps (ns); scratch to sort them */
} Pacer;

static PyTypeObject PacerType;

static int period_of(double rate_hz, long long *period) {
    if (!(rate_hz > 0)) {
        PyObject *r = PyFloat_FromDouble(rate_hz);
        if (r) PyErr_Format(PyExc_ValueError, "rate must be positive, not %R", r);
        Py_XDECREF(r);
        return 0;
    }
    double p = nearbyint(1e9 / rate_hz); /* Python's round(): to nearest, ties to even */
    if (!(p < 9.2e18)) {
        PyErr_SetString(PyExc_ValueError, "rate too low: its period does not fit in 64 bits of ns");
        return 0;
    }
    *period = (long long)p;
    return 1;
}

static long long max_margin(const Pacer *p) {
    if (!p->spin) return (long long)((double)p->period_ns * p->max_lead_share);
    long long m = (long long)((double)p->period_ns * p->spin_share);
    return m > p->min_margin_ns ? m : p->min_margin_ns;
}

static int cmp64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* pacing.Pacer.lateness_quantile: 0 when none is tracked (*some = 0). */
static int64_t quantile(Pacer *p, int *some) {
    int n = p->nlate;
    *some = n > 0;
    if (!n) return 0;
    memcpy(p->sorted, p->late, n * sizeof *p->late);
    qsort(p->sorted, n, sizeof *p->sorted, cmp64);
    int i = (int)(n * p->quantile);
    return p->sorted[i < n - 1 ? i : n - 1];
}

/* pacing.Pacer._relearn */
static void relearn(Pacer *p) {
    int some;
    p->fresh = 0;
    int64_t q = quantile(p, &some);
    if (!some) return;
    long long top = max_margin(p), m;
    if (p->spin) m = q + p->slack_ns > p->min_margin_ns ? q + p->slack_ns : p->min_margin_ns;
    else m = q > 0 ? q : 0;
    p->margin_ns = m < top ? m : top;
}

/* pacing.Pacer._learn: one oversleep into the ring. */
static void learn(Pacer *p, int64_t over) {
    if (p->nlate < p->window) p->late[p->nlate++] = over;
    else {
        p->late[p->at] = over;
        p->at = p->at + 1 < p->window ? p->at + 1 : 0;
    }
    p->fresh++;
    if (p->fresh >= p->resort || p->nlate < p->resort) relearn(p);
}

/* This frame's deadline from the clock read before the sleep; *target: where the sleep ends. */
static long long plan(Pacer *p, long long now, long long *target) {
    long long deadline = p->next;
    if (!p->has_next || now - deadline > p->max_lag * p->period_ns) deadline = now;
    *target = deadline - p->margin_ns;
    return deadline;
}

static void advance(Pacer *p, long long deadline, long long woke) {
    p->woke_ns = woke;
    p->next = deadline + p->period_ns, p->has_next = 1;
}

/* The wait (no Python: runs without the GIL). 0, or EINTR: a signal came during the sleep and the
 * state is as before (the caller checks the signals, then calls again, as time.sleep does). */
static int pacer_wait(Pacer *p, long long *deadline_out) {
    long long now = mono_ns(), target, deadline = plan(p, now, &target), woke = now;
    if (target > now) {
        struct timespec ts = {(time_t)(target / NS_PER_S), (long)(target % NS_PER_S)};
        int r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        if (r == EINTR) return EINTR;
        woke = mono_ns();
        learn(p, woke - target);
    }
    if (p->spin)
        while ((woke = mono_ns()) < deadline) {
        }
    advance(p, deadline, woke);
    *deadline_out = deadline;
    return 0;
}

/* The waiting thread's timer slack, set once per thread (pacing.set_timer_slack). */
static void pacer_slack(Pacer *p) {
    if (!p->slack) return;
    unsigned long ident = PyThread_get_thread_ident();
    if (p->slack_thread_known && ident == p->slack_thread) return;
    p->slack_thread = ident, p->slack_thread_known = 1;
    p->timer_slack_set = prctl(PR_SET_TIMERSLACK, (unsigned long)p->timer_slack_ns, 0UL, 0UL, 0UL) == 0;
}

/* Pacer(rate_hz, spin, timer_slack, (MIN_MARGIN_NS, SPIN_SHARE, MAX_LEAD_SHARE, LATE_QUANTILE,
 * LATE_WINDOW, _RESORT, _SLACK_NS, MAX_LAG, TIMER_SLACK_NS)) */
static int Pacer_init(Pacer *p, PyObject *args, PyObject *kwds) {
    double rate;
    int spin, slack, window, resort;
    long long min_margin, slack_ns, max_lag, timer_slack;
    double spin_share, lead_share, q;
    if (kwds && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Pacer takes no keyword arguments");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "dpp(LdddiiLLL)", &rate, &spin, &slack, &min_margin, &spin_share, &lead_share, &q,
                          &window, &resort, &slack_ns, &max_lag, &timer_slack))
        return -1;
    if (window < 1 || resort < 1) {
        PyErr_SetString(PyExc_ValueError, "LATE_WINDOW and _RESORT must be positive");
        return -1;
    }
    long long period;
    if (!period_of(rate, &period)) return -1;
    int64_t *late = PyMem_Calloc(2 * (size_t)window, sizeof *late);
    if (!late) {
        PyErr_NoMemory();
        return -1;
    }
    PyMem_Free(p->late);
    p->late = late, p->sorted = late + window;
    p->rate_hz = rate, p->period_ns = period, p->spin = spin, p->slack = slack;
    p->min_margin_ns = min_margin, p->spin_share = spin_share, p->max_lead_share = lead_share;
    p->quantile = spin ? q : 0.5;
    p->window = window, p->resort = resort, p->slack_ns = slack_ns, p->max_lag = max_lag;
    p->timer_slack_ns = timer_slack;
    p->margin_ns = spin ? min_margin : 0;
    p->has_next = 0, p->next = 0, p->woke_ns = 0;
    p->nlate = p->at = p->fresh = 0;
    p->slack_thread_known = 0, p->timer_slack_set = 0;
    return 0;
}

static void Pacer_dealloc(Pacer *p) {
    PyMem_Free(p->late);
    Py_TYPE(p)->tp_free((PyObject *)p);
}

static PyObject *Pacer_wait(Pacer *p, PyObject *Py_UNUSED(ignored)) {
    pacer_slack(p);
    long long deadline;
    int r;
    for (;;) {
        Py_BEGIN_ALLOW_THREADS
        r = pacer_wait(p, &deadline);
        Py_END_ALLOW_THREADS
        if (!r) return PyLong_FromLongLong(deadline);
        if (PyErr_CheckSignals() < 0) return NULL;
    }
}

static PyObject *Pacer_advance(Pacer *p, PyObject *args) {
    long long now, woke, target;
    if (!PyArg_ParseTuple(args, "LL", &now, &woke)) return NULL;
    long long deadline = plan(p, now, &target);
    if (target > now) learn(p, woke - target);
    else woke = now;
    if (p->spin && woke < deadline) woke = deadline;
    advance(p, deadline, woke);
    return PyLong_FromLongLong(deadline);
}

static PyObject *Pacer_set_rate(Pacer *p, PyObject *arg) {
    double rate = PyFloat_AsDouble(arg);
    if (rate == -1.0 && PyErr_Occurred()) return NULL;
    long long period;
    if (!period_of(rate, &period)) return NULL;
    if (p->has_next) p->next += period - p->period_ns;
    p->rate_hz = rate, p->period_ns = period;
    long long top = max_margin(p);
    if (p->margin_ns > top) p->margin_ns = top;
    Py_RETURN_NONE;
}

static PyObject *Pacer_lateness_quantile(Pacer *p, PyObject *Py_UNUSED(ignored)) {
    int some;
    int64_t q = quantile(p, &some);
    if (!some) Py_RETURN_NONE;
    return PyLong_FromLongLong(q);
}

static PyObject *Pacer_max_margin(Pacer *p, void *Py_UNUSED(closure)) { return PyLong_FromLongLong(max_margin(p)); }

static PyObject *Pacer_rate(Pacer *p, void *Py_UNUSED(closure)) { return PyFloat_FromDouble(p->rate_hz); }

static PyGetSetDef Pacer_getset[] = {
    {"max_margin_ns", (getter)Pacer_max_margin, NULL, "the margin's bound (pacing.Pacer.max_margin_ns)", NULL},
    {"rate_hz", (getter)Pacer_rate, NULL, "frames a second (set_rate changes it)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMemberDef Pacer_members[] = {
    {"period_ns", T_LONGLONG, offsetof(Pacer, period_ns), READONLY, "the frame period (ns)"},
    {"margin_ns", T_LONGLONG, offsetof(Pacer, margin_ns), 0, "how long before the deadline the sleep ends (ns)"},
    {"spin", T_BOOL, offsetof(Pacer, spin), READONLY, "the rest of the margin is spun"},
    {"timer_slack_set", T_BOOL, offsetof(Pacer, timer_slack_set), READONLY, "the waiting thread's slack was set"},
    {"woke_ns", T_LONGLONG, offsetof(Pacer, woke_ns), READONLY,
     "when the last wait returned (monotonic ns: the clock read after the sleep, or the spin)"},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef Pacer_methods[] = {
    {"wait", (PyCFunction)Pacer_wait, METH_NOARGS,
     "wait() -> deadline ns: pacing.Pacer.wait (the sleep without the GIL, to an absolute time)."},
    {"set_rate", (PyCFunction)Pacer_set_rate, METH_O, "set_rate(rate_hz): pacing.Pacer.set_rate."},
    {"lateness_quantile", (PyCFunction)Pacer_lateness_quantile, METH_NOARGS,
     "lateness_quantile() -> ns or None: pacing.Pacer.lateness_quantile."},
    {"advance", (PyCFunction)Pacer_advance, METH_VARARGS,
     "advance(now, woke) -> deadline: a wait's bookkeeping with the clock read before (now) and after the sleep "
     "(woke), no sleep (for tests: the same state as pacing.Pacer's on those reads)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PacerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "headcast.xr._fastframe.Pacer",
    .tp_basicsize = sizeof(Pacer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "pacing.Pacer in C: a headless session's frame clock (see pacing.native_pacer).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Pacer_init,
    .tp_dealloc = (destructor)Pacer_dealloc,
    .tp_methods = Pacer_methods,
    .tp_members = Pacer_members,
    .tp_getset = Pacer_getset,
};
#endif

/* ---- the TrackingFrame ---- */

typedef struct {
    PyObject_HEAD
    Calls c;
    PyTypeObject *pose_type, *controls_type, *frame_type;
    PyObject *pose_fields, *controls_fields, *frame_fields; /* tuples of slot descriptors, field order */
    Py_ssize_t pose_at_[NPOSE_FIELDS], controls_at_[NCONTROLS_FIELDS], frame_at_[NFRAME_FIELDS]; /* slot_offsets */
    PyObject *invalid_pose, *identity, *origin;
    PyObject *controls;      /* kept while the states read the same, as session.py does */
    double last[NVALUES];    /* the states it was built from */
    PyObject *pose[NLOCATE]; /* each space's last Pose, kept while its location reads the same */
    XrSpaceLocationFlags pose_flags[NLOCATE];
    XrPosef pose_at[NLOCATE]; /* the location it was built from */
    /* each space's last position and orientation tuples, kept while they read the same (a head that
     * turns in place, a 3DoF headset): fewer objects made and freed per frame */
    PyObject *pos_t[NLOCATE], *ori_t[NLOCATE];
    double pos_v[NLOCATE][3], ori_v[NLOCATE][4];
    /* The last two frames returned: the one before last is refilled in place (refill) when nothing
     * but this ring holds it any more, as the app and the benchmarks drop a frame once the next one
     * came: no frame, Pose or tuple made and freed per frame then. */
    PyObject *ring[2];
    int ring_at;
    int timing;              /* set_timing(True): each call fills ns (timings() reads it) */
    int64_t ns[NTIMES];
    /* The session's frame state, for the calls made without it (poll(time_ns), step(offset),
     * frame(), run()): each frame returned counts (seq += 1, last_time = its time), so the session's
     * poll can be this C method itself, with no Python call around it (cold, one costs ~8 us). */
    long long seq, last_time;
    PyObject *profiles, *focused; /* the (left, right) tuple and the bool the frames carry */
    PyObject *on_failure;         /* None, or on_failure(step, result): raises the session's error */
} FrameCalls;

/* The timing array of this call (zeroed, its start noted in T_WHOLE), or NULL when timing is off. */
static int64_t *timing_start(FrameCalls *s) {
    if (!s->timing) return NULL;
    memset(s->ns, 0, sizeof s->ns);
    s->ns[T_WHOLE] = mono_ns();
    return s->ns;
}

/* The whole C call, from timing_start to here (after the frame was built); passes `out` through. */
static PyObject *timing_end(FrameCalls *s, int64_t *ns, PyObject *out) {
    if (ns) ns[T_WHOLE] = mono_ns() - ns[T_WHOLE];
    return out;
}

static PyObject *StepError;

/* Where each field's slot lies in its object, when every field is a plain object slot (a slots
 * dataclass's member descriptors): a new object's slots are then filled directly, as the
 * descriptors would, with no call per field. offsets[0] = 0: set through the descriptors. */
static void slot_offsets(PyObject *fields, int n, Py_ssize_t *offsets) {
    offsets[0] = 0;
    for (int i = 0; i < n; i++) {
        PyObject *d = PyTuple_GET_ITEM(fields, i);
        if (Py_TYPE(d) != &PyMemberDescr_Type) return;
        PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
        if (m->type != T_OBJECT_EX || (m->flags & READONLY) || m->offset <= 0) return;
    }
    for (int i = 0; i < n; i++) offsets[i] = ((PyMemberDescrObject *)PyTuple_GET_ITEM(fields, i))->d_member->offset;
}

/* A new `type` object with `values` (references stolen, NULL when their creation failed). */
static PyObject *make(PyTypeObject *type, PyObject *fields, const Py_ssize_t *offsets, PyObject **values, int n) {
    PyObject *obj = NULL;
    for (int i = 0; i < n; i++)
        if (!values[i]) goto done;
    obj = type->tp_alloc(type, 0);
    if (obj && offsets[0]) {
        for (int i = 0; i < n; i++) *(PyObject **)((char *)obj + offsets[i]) = values[i]; /* stolen */
        return obj;
    }
    for (int i = 0; obj && i < n; i++) {
        PyObject *descr = PyTuple_GET_ITEM(fields, i);
        if (Py_TYPE(descr)->tp_descr_set(descr, obj, values[i]) < 0) Py_CLEAR(obj);
    }
done:
    for (int i = 0; i < n; i++) Py_XDECREF(values[i]);
    return obj;
}

static PyObject *new_ref(PyObject *o) {
    Py_INCREF(o);
    return o;
}

static PyObject *boolean(int v) { return new_ref(v ? Py_True : Py_False); }

/* A tuple of n floats. */
static PyObject *floats(const double *x, int n) {
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t && i < n; i++) {
        PyObject *f = PyFloat_FromDouble(x[i]);
        if (!f) Py_CLEAR(t);
        else PyTuple_SET_ITEM(t, i, f);
    }
    return t;
}

#define ORI_VALID XR_SPACE_LOCATION_ORIENTATION_VALID_BIT
#define POS_VALID XR_SPACE_LOCATION_POSITION_VALID_BIT
#define ORI_TRACKED XR_SPACE_LOCATION_ORIENTATION_TRACKED_BIT
#define POS_TRACKED XR_SPACE_LOCATION_POSITION_TRACKED_BIT
#define NORM_TOLERANCE 1e-3 /* session._NORM_TOLERANCE */

/* session._pose: a located pose with its flags; invalid parts are zeroed, garbage is never valid.
 * The same double arithmetic in the same order, so the same verdict on every input. */
/* n floats as a tuple: the one kept in *kept while x reads the same (bit for bit), else a new one kept. */
static PyObject *kept_floats(PyObject **kept, double *was, const double *x, int n) {
    if (*kept && memcmp(was, x, sizeof *x * (size_t)n) == 0) return new_ref(*kept);
    PyObject *t = floats(x, n);
    if (t) {
        Py_XSETREF(*kept, new_ref(t));
        memcpy(was, x, sizeof *x * (size_t)n);
    }
    return t;
}

/* x as the n floats of tuple t, in place, when t and its floats are held by nothing else (each
 * reference count 1: t is an exclusively held object's, see sole()): 1 done, else 0. */
static int refill_floats(PyObject *t, const double *x, int n) {
#if PY_VERSION_HEX >= 0x030E0000
    (void)t, (void)x, (void)n;
    return 0; /* untested there, and a tuple may keep its hash in itself: new tuples are made instead */
#endif
    if (!PyTuple_CheckExact(t) || Py_REFCNT(t) != 1 || PyTuple_GET_SIZE(t) != n) return 0;
    for (int i = 0; i < n; i++) {
        PyObject *f = PyTuple_GET_ITEM(t, i);
        if (!PyFloat_CheckExact(f) || Py_REFCNT(f) != 1) return 0;
    }
    for (int i = 0; i < n; i++) ((PyFloatObject *)PyTuple_GET_ITEM(t, i))->ob_fval = x[i];
    return 1;
}

/* The slot at `offset` of obj (borrowed). */
#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

/* obj may be refilled in place: of `type`, its fields plain slots (offsets[0] set), and held by
 * one reference only — the ring's, or the slot of an object that is itself held so (a frame's
 * Pose): nobody else can see it change. Never in a free-threaded build (its counts are not exact). */
static int sole(PyObject *obj, PyTypeObject *type, const Py_ssize_t *offsets) {
#ifdef Py_GIL_DISABLED
    (void)obj, (void)type, (void)offsets;
    return 0;
#else
    return obj && Py_TYPE(obj) == type && offsets[0] && Py_REFCNT(obj) == 1;
#endif
}

/* obj's n slots set to values (references stolen, none NULL); the old values are released. */
static PyObject *refill(PyObject *obj, const Py_ssize_t *offsets, PyObject **values, int n) {
    PyObject *old[NFRAME_FIELDS];
    for (int i = 0; i < n; i++) old[i] = SLOT(obj, offsets[i]), SLOT(obj, offsets[i]) = values[i];
    for (int i = 0; i < n; i++) Py_XDECREF(old[i]);
    return new_ref(obj);
}

/* n floats as a tuple (kept_floats), refilling `spare` (a tuple of a Pose being refilled) rather
 * than making one when it is held by nothing else. */
static PyObject *kept_or_refilled(PyObject **kept, double *was, const double *x, int n, PyObject *spare) {
    if (*kept && memcmp(was, x, sizeof *x * (size_t)n) == 0) return new_ref(*kept);
    if (!spare || !refill_floats(spare, x, n)) return kept_floats(kept, was, x, n);
    Py_XSETREF(*kept, new_ref(spare));
    memcpy(was, x, sizeof *x * (size_t)n);
    return new_ref(spare);
}

/* spare: the Pose at this space's slot of a frame being refilled (borrowed), or NULL. */
static PyObject *pose(FrameCalls *s, int i, const XrSpaceLocation *loc, PyObject *spare) {
    XrSpaceLocationFlags flags = loc->locationFlags;
    double qx = loc->pose.orientation.x, qy = loc->pose.orientation.y, qz = loc->pose.orientation.z,
           qw = loc->pose.orientation.w, px = loc->pose.position.x, py = loc->pose.position.y,
           pz = loc->pose.position.z;
    int unit = fabs(qx * qx + qy * qy + qz * qz + qw * qw - 1.0) <= NORM_TOLERANCE; /* false for NaN */
    int finite = fabs(px + py + pz) < INFINITY;                                  /* false for NaN */
    int ori_valid = (flags & ORI_VALID) != 0, pos_valid = (flags & POS_VALID) != 0;
    if (!ori_valid && !pos_valid) return new_ref(s->invalid_pose);
    ori_valid = ori_valid && unit;
    pos_valid = pos_valid && finite;
    double p[3] = {px, py, pz}, q[4] = {qx, qy, qz, qw};
    if (!sole(spare, s->pose_type, s->pose_at_)) spare = NULL;
    /* a Pose's fields in field order: position, orientation, then the four flags */
    PyObject *v[NPOSE_FIELDS] = {
        pos_valid ? kept_or_refilled(&s->pos_t[i], s->pos_v[i], p, 3, spare ? SLOT(spare, s->pose_at_[0]) : NULL)
                  : new_ref(s->origin),
        ori_valid ? kept_or_refilled(&s->ori_t[i], s->ori_v[i], q, 4, spare ? SLOT(spare, s->pose_at_[1]) : NULL)
                  : new_ref(s->identity),
        boolean(pos_valid), boolean(ori_valid),
        boolean(pos_valid && (flags & POS_TRACKED)), boolean(ori_valid && (flags & ORI_TRACKED)),
    };
    if (spare && v[0] && v[1]) return refill(spare, s->pose_at_, v, NPOSE_FIELDS);
    return make(s->pose_type, s->pose_fields, s->pose_at_, v, NPOSE_FIELDS);
}

/* session._value: a non-finite analog value from a misbehaving runtime reads as rest. */
static double value(double x) { return -INFINITY < x && x < INFINITY ? x : 0.0; }

/* session._controls from the states (current_state..., is_active); inactive reads as rest. The
 * object is kept while the values compare equal, as session.py keeps it. */
/* x as a float: `spare` (a float of an object being refilled) set to it when nothing else holds it. */
static PyObject *refilled_float(PyObject *spare, double x) {
    if (!spare || !PyFloat_CheckExact(spare) || Py_REFCNT(spare) != 1) return PyFloat_FromDouble(x);
    ((PyFloatObject *)spare)->ob_fval = x;
    return new_ref(spare);
}

/* n floats as a tuple: `spare` (a tuple of an object being refilled) refilled when nothing else
 * holds it or its floats, else a new one. */
static PyObject *refilled_floats(PyObject *spare, const double *x, int n) {
    return spare && refill_floats(spare, x, n) ? new_ref(spare) : floats(x, n);
}

/* spare: the Controls of a frame being refilled (borrowed), or NULL. */
static PyObject *controls(FrameCalls *s, PyObject *spare) {
    double v[NVALUES];
    int k = 0;
    for (int i = 0; i < 4; i++) {
        const XrActionStateFloat *f = s->c.state[i];
        v[k++] = f->currentState, v[k++] = f->isActive;
    }
    for (int i = 4; i < 6; i++) {
        const XrActionStateVector2f *f = s->c.state[i];
        v[k++] = f->currentState.x, v[k++] = f->currentState.y, v[k++] = f->isActive;
    }
    for (int i = 6; i < 8; i++) {
        const XrActionStateBoolean *f = s->c.state[i];
        v[k++] = f->currentState, v[k++] = f->isActive;
    }
    int same = s->controls != NULL;
    for (int i = 0; same && i < NVALUES; i++) same = v[i] == s->last[i]; /* NaN: never the same */
    if (same) return new_ref(s->controls);
    /* tl tl_on tr tr_on sl sl_on sr sr_on mx my move_on tx ty turn_on jump jump_on menu menu_on */
    double move[2] = {0.0, 0.0}, turn[2] = {0.0, 0.0};
    if (v[10] != 0) move[0] = value(v[8]), move[1] = value(v[9]);
    if (v[13] != 0) turn[0] = value(v[11]), turn[1] = value(v[12]);
    if (!sole(spare, s->controls_type, s->controls_at_)) spare = NULL;
#define OLD(k) (spare ? SLOT(spare, s->controls_at_[k]) : NULL)
    PyObject *c[NCONTROLS_FIELDS] = {
        refilled_floats(OLD(0), move, 2), refilled_floats(OLD(1), turn, 2),
        refilled_float(OLD(2), v[1] != 0 ? value(v[0]) : 0.0), refilled_float(OLD(3), v[3] != 0 ? value(v[2]) : 0.0),
        refilled_float(OLD(4), v[5] != 0 ? value(v[4]) : 0.0), refilled_float(OLD(5), v[7] != 0 ? value(v[6]) : 0.0),
        boolean(v[14] != 0 && v[15] != 0), boolean(v[16] != 0 && v[17] != 0),
    };
#undef OLD
    int ok = 1;
    for (int i = 0; i < NCONTROLS_FIELDS; i++) ok = ok && c[i];
    PyObject *made = spare && ok ? refill(spare, s->controls_at_, c, NCONTROLS_FIELDS)
                                 : make(s->controls_type, s->controls_fields, s->controls_at_, c, NCONTROLS_FIELDS);
    if (!made) return NULL;
    Py_XSETREF(s->controls, new_ref(made));
    memcpy(s->last, v, sizeof v);
    return made;
}

/* Space i's Pose: the last one while the runtime reports the same bits (a controller at rest, an
 * untracked hand: no new objects, as for the controls), else a new one (pose() above). */
static PyObject *space_pose(FrameCalls *s, int i, PyObject *spare) {
    const XrSpaceLocation *loc = s->c.location[i];
    if (s->pose[i] && loc->locationFlags == s->pose_flags[i] &&
        memcmp(&loc->pose, &s->pose_at[i], sizeof loc->pose) == 0)
        return new_ref(s->pose[i]);
    PyObject *made = pose(s, i, loc, spare);
    if (!made) return NULL;
    Py_XSETREF(s->pose[i], new_ref(made));
    s->pose_flags[i] = loc->locationFlags;
    memcpy(&s->pose_at[i], &loc->pose, sizeof loc->pose);
    return made;
}

/* The TrackingFrame of the located spaces and read states (time: a new reference, stolen). */
static PyObject *build(FrameCalls *s, PyObject *seq, PyObject *time, PyObject *profiles, PyObject *focused) {
    if (!time) return NULL;
    if (!PyTuple_Check(profiles) || PyTuple_GET_SIZE(profiles) != 2) {
        Py_DECREF(time);
        PyErr_SetString(PyExc_TypeError, "profiles must be a (left, right) tuple");
        return NULL;
    }
    /* the frame before last, when nothing but the ring holds it: refilled, its Poses too (pose) */
    PyObject *spare = s->ring[s->ring_at];
    if (!sole(spare, s->frame_type, s->frame_at_)) spare = NULL;
#define SPARE(k) (spare ? SLOT(spare, s->frame_at_[2 + (k)]) : NULL)
    PyObject *v[NFRAME_FIELDS] = {
        new_ref(seq), time,
        space_pose(s, 0, SPARE(0)), space_pose(s, 1, SPARE(1)), space_pose(s, 2, SPARE(2)),
        space_pose(s, 3, SPARE(3)), space_pose(s, 4, SPARE(4)), controls(s, SPARE(5)),
        new_ref(PyTuple_GET_ITEM(profiles, 0)), new_ref(PyTuple_GET_ITEM(profiles, 1)), new_ref(focused),
    };
#undef SPARE
    int ok = 1;
    for (int i = 0; i < NFRAME_FIELDS; i++) ok = ok && v[i];
    PyObject *frame = spare && ok ? refill(spare, s->frame_at_, v, NFRAME_FIELDS)
                                  : make(s->frame_type, s->frame_fields, s->frame_at_, v, NFRAME_FIELDS);
    if (frame && frame != spare) Py_XSETREF(s->ring[s->ring_at], new_ref(frame));
    s->ring_at ^= 1;
    return frame;
}

static PyObject *step_error(FrameCalls *s, int step, PyObject *frame) {
    PyObject *args = Py_BuildValue("(iiO)", step, (int)s->c.result, frame ? frame : Py_None);
    if (args) PyErr_SetObject(StepError, args);
    Py_XDECREF(args);
    return NULL;
}

/* xrEndFrame fails after the frame was read: the error carries the frame, which counts. */
static PyObject *finish(FrameCalls *s, int step, PyObject *seq, PyObject *profiles, PyObject *focused) {
    if (step != FF_DONE && step != FF_END) return step_error(s, step, NULL);
    PyObject *frame = build(s, seq, PyLong_FromLongLong(s->c.frame_state->predictedDisplayTime), profiles, focused);
    if (!frame || step == FF_DONE) return frame;
    step_error(s, step, frame);
    Py_DECREF(frame);
    return NULL;
}

static int frame_args(Py_ssize_t n, Py_ssize_t want) {
    if (n == want || n == want - 3) return 1;
    PyErr_Format(PyExc_TypeError, "expected %zd arguments (or %zd: the state's), got %zd", want, want - 3, n);
    return 0;
}

/* The call's (seq, profiles, focused): its own arguments, or (stateful: NULL) the object's state. */
typedef struct {
    PyObject *seq, *profiles, *focused;
    int owned; /* seq is a new reference (the state's) */
} FrameArgs;

static int state_args(FrameCalls *s, FrameArgs *a) {
    if (!s->profiles || !s->focused) {
        PyErr_SetString(PyExc_AttributeError, "FrameCalls: profiles and focused must be set");
        return 0;
    }
    a->seq = PyLong_FromLongLong(s->seq);
    a->profiles = s->profiles, a->focused = s->focused, a->owned = 1;
    return a->seq != NULL;
}

/* A stateful call's frame counts (the session's _counted); drops the args' references. */
static PyObject *counted(FrameCalls *s, FrameArgs *a, PyObject *frame, long long time) {
    if (a->owned) {
        Py_DECREF(a->seq);
        if (frame) s->seq++, s->last_time = time;
    }
    return frame;
}

/* A failed stateful call: the session's error (on_failure raises it), else Step as stateless. */
static PyObject *failure(FrameCalls *s, FrameArgs *a, int step) {
    if (!a->owned || s->on_failure == NULL || s->on_failure == Py_None || !PyErr_ExceptionMatches(StepError))
        return NULL;
    PyErr_Clear();
    PyObject *r = PyObject_CallFunction(s->on_failure, "ii", step, (int)s->c.result);
    if (r) { /* it did not raise: the Step error again */
        Py_DECREF(r);
        return step_error(s, step, NULL);
    }
    return NULL;
}

static PyObject *FrameCalls_frame(FrameCalls *s, PyObject *const *args, Py_ssize_t n) {
    if (!frame_args(n, 3)) return NULL;
    FrameArgs a = {n ? args[0] : NULL, n ? args[1] : NULL, n ? args[2] : NULL, 0};
    if (!n && !state_args(s, &a)) return NULL;
    int step;
    int64_t *ns = s->timing ? s->ns : NULL;
    if (ns) memset(ns, 0, sizeof s->ns);
    Py_BEGIN_ALLOW_THREADS /* xrWaitFrame sleeps most of a frame */
    step = calls_frame(&s->c, ns);
    Py_END_ALLOW_THREADS
    int64_t t = ns ? mono_ns() : 0; /* the wait is not counted: the runtime calls after it, then this */
    PyObject *out = counted(s, &a, finish(s, step, a.seq, a.profiles, a.focused), s->c.frame_state->predictedDisplayTime);
    if (ns) ns[T_WHOLE] = mono_ns() - t + ns[T_OTHER] + ns[T_SYNC] + ns[T_LOCATE] + ns[T_STATES];
    return out;
}

static PyObject *FrameCalls_run(FrameCalls *s, PyObject *const *args, Py_ssize_t n) {
    if (!frame_args(n, 3)) return NULL;
    FrameArgs a = {n ? args[0] : NULL, n ? args[1] : NULL, n ? args[2] : NULL, 0};
    if (!n && !state_args(s, &a)) return NULL;
    int step;
    int64_t *ns = timing_start(s);
    Py_BEGIN_ALLOW_THREADS
    step = calls_run(&s->c, ns);
    Py_END_ALLOW_THREADS
    PyObject *frame = finish(s, step, a.seq, a.profiles, a.focused);
    return timing_end(s, ns, counted(s, &a, frame, s->c.frame_state->predictedDisplayTime));
}

static PyObject *FrameCalls_poll(FrameCalls *s, PyObject *const *args, Py_ssize_t n) {
    int64_t *ns = timing_start(s);
    if (!frame_args(n, 4)) return NULL;
    PyObject *t = args[n == 1 ? 0 : 1];
    XrTime time = PyLong_AsLongLong(t);
    if (time == -1 && PyErr_Occurred()) return NULL;
    FrameArgs a = {n > 1 ? args[0] : NULL, n > 1 ? args[2] : NULL, n > 1 ? args[3] : NULL, 0};
    if (n == 1 && !state_args(s, &a)) return NULL;
    int step;
    Py_BEGIN_ALLOW_THREADS
    step = calls_poll(&s->c, time, ns);
    Py_END_ALLOW_THREADS
    if (step) {
        counted(s, &a, step_error(s, step, NULL), 0);
        return failure(s, &a, step);
    }
    return timing_end(s, ns, counted(s, &a, build(s, a.seq, new_ref(t), a.profiles, a.focused), time));
}

static PyObject *stepped(FrameCalls *s, FrameArgs *a, int step, XrTime now, int64_t *ns);

static PyObject *FrameCalls_step(FrameCalls *s, PyObject *const *args, Py_ssize_t n) {
    int64_t *ns = timing_start(s);
    if (!frame_args(n, 4)) return NULL;
    int64_t offset = PyLong_AsLongLong(args[n == 1 ? 0 : 1]);
    if (offset == -1 && PyErr_Occurred()) return NULL;
    FrameArgs a = {n > 1 ? args[0] : NULL, n > 1 ? args[2] : NULL, n > 1 ? args[3] : NULL, 0};
    if (n == 1 && !state_args(s, &a)) return NULL;
    int step;
    XrTime now = 0;
    Py_BEGIN_ALLOW_THREADS
    step = calls_step(&s->c, offset, &now, ns);
    Py_END_ALLOW_THREADS
    return stepped(s, &a, step, now, ns);
}

/* A headless step's outcome: its frame, counted, or Step (FF_EVENT: with the now to poll at). */
static PyObject *stepped(FrameCalls *s, FrameArgs *a_, int step, XrTime now, int64_t *ns) {
    FrameArgs a = *a_;
    if (step == FF_EVENT) { /* Step(FF_EVENT, result, now): the session polls at that now next */
        PyObject *t = PyLong_FromLongLong(now);
        if (t) step_error(s, step, t);
        Py_XDECREF(t);
        return counted(s, &a, NULL, 0);
    }
    if (step) return counted(s, &a, step_error(s, step, NULL), 0);
    return timing_end(s, ns, counted(s, &a, build(s, a.seq, PyLong_FromLongLong(now), a.profiles, a.focused), now));
}

/* paced(pacer, offset): the pacer's wait, then step(offset); with pacing's C Pacer the wait and the
 * step are one stretch without the GIL (the timing, when on, starts at the wake-up). */
static PyObject *FrameCalls_paced(FrameCalls *s, PyObject *const *args, Py_ssize_t n) {
    if (n != 2) {
        PyErr_Format(PyExc_TypeError, "paced(pacer, offset): expected 2 arguments, got %zd", n);
        return NULL;
    }
    int64_t offset = PyLong_AsLongLong(args[1]);
    if (offset == -1 && PyErr_Occurred()) return NULL;
    FrameArgs a;
    if (!state_args(s, &a)) return NULL;
    int step = 0;
    XrTime now = 0;
    int64_t *ns = s->timing ? s->ns : NULL;
#ifdef HAVE_PACER
    if (Py_TYPE(args[0]) == &PacerType) {
        Pacer *p = (Pacer *)args[0];
        pacer_slack(p);
        long long deadline;
        for (int r = EINTR; r;) {
            Py_BEGIN_ALLOW_THREADS
            r = pacer_wait(p, &deadline);
            if (!r) {
                if (ns) memset(ns, 0, sizeof s->ns), ns[T_WHOLE] = mono_ns();
                step = calls_step(&s->c, offset, &now, ns);
            }
            Py_END_ALLOW_THREADS
            if (r && PyErr_CheckSignals() < 0) return counted(s, &a, NULL, 0);
        }
        return stepped(s, &a, step, now, ns);
    }
#endif
    PyObject *waited = PyObject_CallMethod(args[0], "wait", NULL);
    if (!waited) return counted(s, &a, NULL, 0);
    Py_DECREF(waited);
    ns = timing_start(s);
    Py_BEGIN_ALLOW_THREADS
    step = calls_step(&s->c, offset, &now, ns);
    Py_END_ALLOW_THREADS
    return stepped(s, &a, step, now, ns);
}

static PyObject *FrameCalls_set_timing(FrameCalls *s, PyObject *arg) {
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    s->timing = on;
    memset(s->ns, 0, sizeof s->ns);
    Py_RETURN_NONE;
}

static PyObject *FrameCalls_timings(FrameCalls *s, PyObject *Py_UNUSED(ignored)) {
    return Py_BuildValue("(LLLLL)", (long long)s->ns[T_OTHER], (long long)s->ns[T_SYNC], (long long)s->ns[T_LOCATE],
                         (long long)s->ns[T_STATES], (long long)s->ns[T_WHOLE]);
}

static PyObject *FrameCalls_now(FrameCalls *s, PyObject *arg) {
    int64_t offset = PyLong_AsLongLong(arg);
    if (offset == -1 && PyErr_Occurred()) return NULL;
    XrTime now = 0;
    if (calls_now(&s->c, offset, &now)) return step_error(s, FF_TIME, NULL);
    return PyLong_FromLongLong(now);
}

static PyMemberDef FrameCalls_members[] = {
    {"seq", T_LONGLONG, offsetof(FrameCalls, seq), 0, "the next frame's seq (the stateful calls count)"},
    {"last_time", T_LONGLONG, offsetof(FrameCalls, last_time), 0, "the last counted frame's time_ns"},
    {"profiles", T_OBJECT_EX, offsetof(FrameCalls, profiles), 0, "(left, right) profile paths, for the frames"},
    {"focused", T_OBJECT_EX, offsetof(FrameCalls, focused), 0, "the session's focus (a bool), for the frames"},
    {"on_failure", T_OBJECT, offsetof(FrameCalls, on_failure), 0,
     "None, or on_failure(step, result): raises the error a failed stateful poll() raises instead of Step"},
    {NULL, 0, 0, 0, NULL},
};

static PyMethodDef FrameCalls_methods[] = {
    {"frame", (PyCFunction)(void (*)(void))FrameCalls_frame, METH_FASTCALL,
     "frame(seq, profiles, focused) -> TrackingFrame: wait, poll one event, begin, sync, locate, read, end. "
     "Without arguments (this for each call below): the object's seq, profiles and focused, and the frame counts."},
    {"run", (PyCFunction)(void (*)(void))FrameCalls_run, METH_FASTCALL,
     "run(seq, profiles, focused) or run() -> TrackingFrame: the frame after a wait whose events were handled."},
    {"poll", (PyCFunction)(void (*)(void))FrameCalls_poll, METH_FASTCALL,
     "poll(seq, time_ns, profiles, focused) -> TrackingFrame: sync, locate at time_ns, read. poll(time_ns): "
     "stateful; a failure raises through on_failure when set."},
    {"step", (PyCFunction)(void (*)(void))FrameCalls_step, METH_FASTCALL,
     "step(seq, offset, profiles, focused) or step(offset) -> TrackingFrame: a headless step: the runtime's now, one event "
     "poll (pending: Step(FF_EVENT, result, now)), sync, locate at now, read (no frame calls)."},
    {"paced", (PyCFunction)(void (*)(void))FrameCalls_paced, METH_FASTCALL,
     "paced(pacer, offset) -> TrackingFrame: pacer.wait(), then step(offset); with the C Pacer both in one call, "
     "the GIL released from the sleep to the frame's objects."},
    {"now", (PyCFunction)FrameCalls_now, METH_O,
     "now(offset) -> XrTime: the runtime's now (see calls_now)."},
    {"set_timing", (PyCFunction)FrameCalls_set_timing, METH_O,
     "set_timing(on): from now on each frame/run/poll/step call notes where its time went (off: nothing is read)."},
    {"timings", (PyCFunction)FrameCalls_timings, METH_NOARGS,
     "timings() -> (other, sync, locate, states, whole) ns of the last timed call: the runtime's own calls (other: "
     "the clock conversion and event poll of a step, or a frame's event poll, begin and end; sync; the five "
     "locates; the eight state reads) and the whole C call (the frame's wait not counted)."},
    {NULL, NULL, 0, NULL},
};

static int fields_ok(PyObject *fields, Py_ssize_t n, const char *what) {
    if (!PyTuple_Check(fields) || PyTuple_GET_SIZE(fields) != n) {
        PyErr_Format(PyExc_TypeError, "%s: expected a tuple of %zd slot descriptors", what, n);
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (!Py_TYPE(PyTuple_GET_ITEM(fields, i))->tp_descr_set) {
            PyErr_Format(PyExc_TypeError, "%s: field %zd is not a settable descriptor", what, i);
            return 0;
        }
    return 1;
}

/* FrameCalls(context_address, context_size, (Pose, Controls, TrackingFrame), (their descriptor
 * tuples), (INVALID_POSE, IDENTITY, ORIGIN)) */
static int FrameCalls_init(FrameCalls *s, PyObject *args, PyObject *kwds) {
    unsigned long long address, size;
    PyObject *pt, *ct, *ft, *pf, *cf, *ff, *inv, *idn, *org;
    if (kwds && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "FrameCalls takes no keyword arguments");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "KK(O!O!O!)(OOO)(OOO)", &address, &size, &PyType_Type, &pt, &PyType_Type, &ct,
                          &PyType_Type, &ft, &pf, &cf, &ff, &inv, &idn, &org))
        return -1;
    if (size != sizeof(Calls)) {
        PyErr_Format(PyExc_ValueError, "context of %llu bytes, the helper's is %zu", size, sizeof(Calls));
        return -1;
    }
    if (!fields_ok(pf, NPOSE_FIELDS, "Pose") || !fields_ok(cf, NCONTROLS_FIELDS, "Controls") ||
        !fields_ok(ff, NFRAME_FIELDS, "TrackingFrame"))
        return -1;
    memcpy(&s->c, (const void *)(uintptr_t)address, sizeof s->c);
    Py_XSETREF(s->pose_type, (PyTypeObject *)new_ref(pt));
    Py_XSETREF(s->controls_type, (PyTypeObject *)new_ref(ct));
    Py_XSETREF(s->frame_type, (PyTypeObject *)new_ref(ft));
    Py_XSETREF(s->pose_fields, new_ref(pf));
    Py_XSETREF(s->controls_fields, new_ref(cf));
    Py_XSETREF(s->frame_fields, new_ref(ff));
    slot_offsets(pf, NPOSE_FIELDS, s->pose_at_);
    slot_offsets(cf, NCONTROLS_FIELDS, s->controls_at_);
    slot_offsets(ff, NFRAME_FIELDS, s->frame_at_);
    Py_XSETREF(s->invalid_pose, new_ref(inv));
    Py_XSETREF(s->identity, new_ref(idn));
    Py_XSETREF(s->origin, new_ref(org));
    Py_CLEAR(s->controls);
    Py_CLEAR(s->ring[0]);
    Py_CLEAR(s->ring[1]);
    for (int i = 0; i < NLOCATE; i++) {
        Py_CLEAR(s->pose[i]);
        Py_CLEAR(s->pos_t[i]);
        Py_CLEAR(s->ori_t[i]);
    }
    s->seq = s->last_time = 0;
    Py_XSETREF(s->profiles, Py_BuildValue("(ss)", "", ""));
    Py_XSETREF(s->focused, new_ref(Py_False));
    Py_CLEAR(s->on_failure);
    return s->profiles ? 0 : -1;
}

static void FrameCalls_dealloc(FrameCalls *s) {
    Py_XDECREF(s->pose_type);
    Py_XDECREF(s->controls_type);
    Py_XDECREF(s->frame_type);
    Py_XDECREF(s->pose_fields);
    Py_XDECREF(s->controls_fields);
    Py_XDECREF(s->frame_fields);
    Py_XDECREF(s->invalid_pose);
    Py_XDECREF(s->identity);
    Py_XDECREF(s->origin);
    Py_XDECREF(s->controls);
    Py_XDECREF(s->ring[0]);
    Py_XDECREF(s->ring[1]);
    for (int i = 0; i < NLOCATE; i++) {
        Py_XDECREF(s->pose[i]);
        Py_XDECREF(s->pos_t[i]);
        Py_XDECREF(s->ori_t[i]);
    }
    Py_XDECREF(s->profiles);
    Py_XDECREF(s->focused);
    Py_XDECREF(s->on_failure);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static PyTypeObject FrameCallsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "headcast.xr._fastframe.FrameCalls",
    .tp_basicsize = sizeof(FrameCalls),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One XR session's per-frame runtime calls and TrackingFrame construction.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)FrameCalls_init,
    .tp_dealloc = (destructor)FrameCalls_dealloc,
    .tp_methods = FrameCalls_methods,
    .tp_members = FrameCalls_members,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastframe", "headcast.xr's native frame helper (see fastframe.py).", -1, NULL,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__fastframe(void) {
    if (PyType_Ready(&FrameCallsType) < 0) return NULL;
#ifdef HAVE_PACER
    if (PyType_Ready(&PacerType) < 0) return NULL;
#endif
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (!StepError) /* one class however often the module is initialised */
        StepError = PyErr_NewExceptionWithDoc("headcast.xr._fastframe.Step",
                                              "A runtime call failed, or an event is pending: args (step, XrResult, frame or None).",
                                              NULL, NULL);
    if (!StepError || PyModule_AddObjectRef(m, "Step", StepError) < 0 ||
        PyModule_AddObjectRef(m, "FrameCalls", (PyObject *)&FrameCallsType) < 0 ||
#ifdef HAVE_PACER
        PyModule_AddObjectRef(m, "Pacer", (PyObject *)&PacerType) < 0 ||
#endif
        PyModule_AddIntConstant(m, "CONTEXT_SIZE", (long)sizeof(Calls)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
