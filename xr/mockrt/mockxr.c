/*
 * MockXR: headcast's mocked OpenXR runtime.
 *
 * A real OpenXR runtime library that the Khronos loader loads through XR_RUNTIME_JSON. It plays
 * scripted motion (assets/motions/, *.motion files) for the head and both controllers, emulates one
 * physical controller type, and exports a small control API (mockxr_*) that tests call through
 * ctypes on the same dlopen handle the loader uses.
 *
 * Built with gcc against Debian's libopenxr-dev 1.0.20 headers (xr/mockrt/build.py). Everything
 * is static or hidden: the loader in the same process exports the same xr* names, so only
 * xrNegotiateLoaderRuntimeInterface and the mockxr_* control functions are visible.
 *
 * Motion is a function of time: xrLocateSpace evaluates the motion files at the XrTime it is asked
 * for (interpolated between keyframes, time 0 = xrBeginSession), xrSyncActions at the runtime's
 * clock. Behaviour profiles imitate real runtimes where they differ (README.md beside this file).
 *
 * Environment (read at xrCreateInstance unless the control API set the value):
 *   HEADCAST_MOCK_PROFILE_RUNTIME=monado|monado25|steamvr|steamvr-windows|meta-pc|strict
 *                                 the runtime imitated (default monado): its extension list and
 *                                 behaviour (RT_EXTENSIONS below, xr/mockrt/README.md)
 *   HEADCAST_MOCK_CLOCK=step      the step clock (deterministic time: see CLOCK_STEP)
 *   HEADCAST_MOCK_HEADLESS_FOCUS=1  headless sessions are focused at begin (their inputs sync)
 *   HEADCAST_MOCK_MOTION=<file>   motion file played from session begin
 *   HEADCAST_MOCK_SCRIPT=<file>   second motion file layered on top (same format; !commands)
 *   HEADCAST_MOCK_THROTTLE=0      xrWaitFrame does not pace at 90 Hz
 *   HEADCAST_MOCK_PROFILE=<path>  emulated controller, default /interaction_profiles/oculus/touch_controller
 *   HEADCAST_MOCK_LOG=<file>      JSON-lines log of state changes, haptics and ended frames
 *   HEADCAST_MOCK_FAIL=<function>:<result>[:<after>[:<times>]]  an injected failure (see FAILABLE)
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* the xr* names are ours (static); the loader's prototypes would clash */
#define XR_NO_PROTOTYPES 1
#define XR_USE_TIMESPEC 1
#define XR_USE_GRAPHICS_API_OPENGL 1
#include <openxr/openxr.h>
#include <openxr/openxr_platform.h>
#include <openxr/openxr_reflection.h>

#define EXPORT __attribute__((visibility("default")))
/* The per-frame path (sync, locate, state reads, event poll, time, frame calls) together in
 * .text.hot: run right after the app's sleep, its code is cold, and fewer pages cost fewer misses. */
#define HOT __attribute__((hot))

/* What the per-frame calls read and write lies together (HOT_DATA): right after the app's sleep
 * every cache line and page they touch is a miss, and state spread over the library's 300 kB of
 * tables and buffers cost a page walk per variable. */
#define HOT_DATA __attribute__((section(".data.mockxr_hot")))

#define API static XRAPI_ATTR XrResult XRAPI_CALL
#define HOT_API static HOT XRAPI_ATTR XrResult XRAPI_CALL

/* ---- loader negotiation (openxr_loader_negotiation.h is not in the 1.0.20 headers) ---- */

typedef enum {
    LOADER_STRUCT_UNINTIALIZED = 0,
    LOADER_STRUCT_LOADER_INFO = 1,
    LOADER_STRUCT_API_LAYER_REQUEST = 2,
    LOADER_STRUCT_RUNTIME_REQUEST = 3,
    LOADER_STRUCT_MAX_ENUM = 0x7FFFFFFF
} XrLoaderInterfaceStructs;

typedef struct XrNegotiateLoaderInfo {
    XrLoaderInterfaceStructs structType;
    uint32_t structVersion;
    size_t structSize;
    uint32_t minInterfaceVersion;
    uint32_t maxInterfaceVersion;
    XrVersion minApiVersion;
    XrVersion maxApiVersion;
} XrNegotiateLoaderInfo;

typedef struct XrNegotiateRuntimeRequest {
    XrLoaderInterfaceStructs structType;
    uint32_t structVersion;
    size_t structSize;
    uint32_t runtimeInterfaceVersion;
    XrVersion runtimeApiVersion;
    PFN_xrGetInstanceProcAddr getInstanceProcAddr;
} XrNegotiateRuntimeRequest;

/* ---- OpenXR 1.1 additions the 1.0.20 headers lack ---- */

#define MOCK_TYPE_SPACES_LOCATE_INFO ((XrStructureType)1000471000)
#define MOCK_TYPE_SPACE_LOCATIONS ((XrStructureType)1000471001)
#define MOCK_TYPE_SPACE_VELOCITIES ((XrStructureType)1000471002)
#define MOCK_REFERENCE_SPACE_TYPE_LOCAL_FLOOR ((XrReferenceSpaceType)1000426000)

typedef struct MockSpacesLocateInfo {
    XrStructureType type;
    const void *next;
    XrSpace baseSpace;
    XrTime time;
    uint32_t spaceCount;
    const XrSpace *spaces;
} MockSpacesLocateInfo;

typedef struct MockSpaceLocationData {
    XrSpaceLocationFlags locationFlags;
    XrPosef pose;
} MockSpaceLocationData;

typedef struct MockSpaceLocations {
    XrStructureType type;
    void *next;
    uint32_t locationCount;
    MockSpaceLocationData *locations;
} MockSpaceLocations;

/* The GLX binding, laid out as in openxr_platform.h, so that no X11/GL headers are needed. */
typedef struct MockGraphicsBindingOpenGLXlib {
    XrStructureType type;
    const void *next;
    void *xDisplay;
    uint32_t visualid;
    void *glxFBConfig;
    unsigned long glxDrawable;
    void *glxContext;
} MockGraphicsBindingOpenGLXlib;

/* ---- constants ---- */

#define RUNTIME_NAME "MockXR (headcast)"
#define SYSTEM_ID ((XrSystemId)1)
#define FRAME_PERIOD_NS 11111111LL /* 90 Hz */
#define NOMINAL_RATE 90.0
#define IPD 0.064f
#define LOCAL_HEIGHT 1.6f
#define VIEW_W 1024
#define VIEW_H 1024
#define ALL_FLAGS                                                                                  \
    (XR_SPACE_LOCATION_ORIENTATION_VALID_BIT | XR_SPACE_LOCATION_POSITION_VALID_BIT |             \
     XR_SPACE_LOCATION_ORIENTATION_TRACKED_BIT | XR_SPACE_LOCATION_POSITION_TRACKED_BIT)

static char g_error[512]; /* last control-API / motion error, read by mockxr_last_error */

static void set_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_error, sizeof g_error, fmt, ap);
    va_end(ap);
}

static HOT XrTime now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (XrTime)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---- pose math (double inside, float at the API) ---- */

static const XrPosef IDENTITY_POSE = {{0, 0, 0, 1}, {0, 0, 0}};

static HOT int pose_is_identity(const XrPosef *p) {
    return p->orientation.x == 0 && p->orientation.y == 0 && p->orientation.z == 0 &&
           p->orientation.w == 1 && p->position.x == 0 && p->position.y == 0 &&
           p->position.z == 0;
}

static HOT void quat_mul(const double a[4], const double b[4], double o[4]) {
    double x = a[3] * b[0] + a[0] * b[3] + a[1] * b[2] - a[2] * b[1];
    double y = a[3] * b[1] - a[0] * b[2] + a[1] * b[3] + a[2] * b[0];
    double z = a[3] * b[2] + a[0] * b[1] - a[1] * b[0] + a[2] * b[3];
    double w = a[3] * b[3] - a[0] * b[0] - a[1] * b[1] - a[2] * b[2];
    o[0] = x, o[1] = y, o[2] = z, o[3] = w;
}

static HOT void quat_rotate(const double q[4], const double v[3], double o[3]) {
    /* v' = v + 2w(q×v) + 2q×(q×v) */
    double tx = 2 * (q[1] * v[2] - q[2] * v[1]);
    double ty = 2 * (q[2] * v[0] - q[0] * v[2]);
    double tz = 2 * (q[0] * v[1] - q[1] * v[0]);
    o[0] = v[0] + q[3] * tx + (q[1] * tz - q[2] * ty);
    o[1] = v[1] + q[3] * ty + (q[2] * tx - q[0] * tz);
    o[2] = v[2] + q[3] * tz + (q[0] * ty - q[1] * tx);
}

/* a ∘ b: b expressed in a's frame, returned in a's parent frame. Identity operands are exact. */
static HOT XrPosef pose_compose(const XrPosef *a, const XrPosef *b) {
    if (pose_is_identity(a)) return *b;
    if (pose_is_identity(b)) return *a;
    double qa[4] = {a->orientation.x, a->orientation.y, a->orientation.z, a->orientation.w};
    double qb[4] = {b->orientation.x, b->orientation.y, b->orientation.z, b->orientation.w};
    double pb[3] = {b->position.x, b->position.y, b->position.z}, r[3], q[4];
    quat_mul(qa, qb, q);
    quat_rotate(qa, pb, r);
    XrPosef o;
    o.orientation.x = (float)q[0], o.orientation.y = (float)q[1];
    o.orientation.z = (float)q[2], o.orientation.w = (float)q[3];
    o.position.x = (float)(r[0] + a->position.x);
    o.position.y = (float)(r[1] + a->position.y);
    o.position.z = (float)(r[2] + a->position.z);
    return o;
}

static HOT XrPosef pose_inverse(const XrPosef *a) {
    if (pose_is_identity(a)) return *a;
    double qi[4] = {-a->orientation.x, -a->orientation.y, -a->orientation.z, a->orientation.w};
    double p[3] = {-a->position.x, -a->position.y, -a->position.z}, r[3];
    quat_rotate(qi, p, r);
    XrPosef o;
    o.orientation.x = (float)qi[0], o.orientation.y = (float)qi[1];
    o.orientation.z = (float)qi[2], o.orientation.w = (float)qi[3];
    o.position.x = (float)r[0], o.position.y = (float)r[1], o.position.z = (float)r[2];
    return o;
}

static int quat_is_unit(const XrQuaternionf *q) {
    double n = (double)q->x * q->x + (double)q->y * q->y + (double)q->z * q->z + (double)q->w * q->w;
    return isfinite(n) && fabs(n - 1.0) <= 0.01;
}

static void quat_from_ypr(double yaw, double pitch, double roll, double o[4]) {
    /* yaw about +Y (turn left), then pitch about +X (look up), then roll about +Z */
    double d = M_PI / 360.0;
    double qy[4] = {0, sin(yaw * d), 0, cos(yaw * d)};
    double qp[4] = {sin(pitch * d), 0, 0, cos(pitch * d)};
    double qr[4] = {0, 0, sin(roll * d), cos(roll * d)};
    double t[4];
    quat_mul(qy, qp, t);
    quat_mul(t, qr, o);
}

/* The arc between two unit quaternions, what slerp needs of them whatever the fraction: found once
 * per pair of keyframes when a motion is loaded (no acos per locate). */
typedef struct {
    double th, s; /* the angle (acos of the dot product) and its sine */
    int flip;     /* b is negated: the dot product was negative (the shorter way round) */
    int linear;   /* nearly the same: lerp (dot > 0.9995) */
} Arc;

static void arc_of(const float a[4], const float b[4], Arc *arc) {
    double qa[4] = {a[0], a[1], a[2], a[3]}, qb[4] = {b[0], b[1], b[2], b[3]};
    double dot = qa[0] * qb[0] + qa[1] * qb[1] + qa[2] * qb[2] + qa[3] * qb[3];
    arc->flip = dot < 0;
    if (arc->flip) dot = -dot;
    arc->linear = dot > 0.9995;
    arc->th = arc->linear ? 0 : acos(dot);
    arc->s = arc->linear ? 0 : sin(arc->th);
}

static HOT void quat_slerp(const float a[4], const float b[4], const Arc *arc, double f, float o[4]) {
    double qa[4] = {a[0], a[1], a[2], a[3]}, qb[4] = {b[0], b[1], b[2], b[3]};
    if (arc->flip)
        for (int i = 0; i < 4; i++) qb[i] = -qb[i];
    double wa, wb;
    if (arc->linear) {
        wa = 1 - f, wb = f;
    } else {
        double th = arc->th, s = arc->s;
        wa = sin((1 - f) * th) / s, wb = sin(f * th) / s;
    }
    double r[4], n = 0;
    for (int i = 0; i < 4; i++) r[i] = wa * qa[i] + wb * qb[i], n += r[i] * r[i];
    n = sqrt(n);
    for (int i = 0; i < 4; i++) o[i] = (float)(r[i] / n);
}

/* ---- paths ---- */

#define MAX_PATHS 4096
static char *g_paths[MAX_PATHS]; /* XrPath = index + 1 */
/* Each path's action state slot (sub_slot: 0 for none, 1 left hand, 2 right, 3 head, 4 gamepad, -1
 * any other path), found once when the path is interned: the state reads and the locates of action
 * spaces ask for it on every call, and a string compare there reads the path's text each time. */
static HOT_DATA signed char g_path_slot[MAX_PATHS];
static HOT_DATA uint32_t g_npaths;

/* (Defined here, after the path slots: the hot variables lie in the reverse order of their
 * definitions, and this puts the lock beside the rest of them.) One recursive lock around all runtime state: the control API may be called from a test thread
 * while the app's frame loop runs. LOCKED holds it until the enclosing block ends. Taken inline
 * (an atomic exchange, no call into libc: the first pthread_mutex_lock after a sleep cost ~1 us of
 * cold code), waiting on a futex when another thread holds it (Drepper's "Futexes are tricky",
 * mutex 2: 0 free, 1 held, 2 held with waiters). The owner is known by the address of a
 * thread-local byte (initial-exec: read from the thread pointer, no __tls_get_addr call). */
static HOT_DATA struct {
    _Atomic int word;
    int depth;                 /* the owner's nesting: written by the owner only */
    const void *_Atomic owner; /* &t_self of the holding thread, NULL when free */
} g_lock;
static __thread char t_self __attribute__((tls_model("initial-exec")));

static void lock_wait(void) {
    int c = atomic_exchange_explicit(&g_lock.word, 2, memory_order_acquire);
    while (c != 0) {
        syscall(SYS_futex, &g_lock.word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
        c = atomic_exchange_explicit(&g_lock.word, 2, memory_order_acquire);
    }
}

static HOT void lock_take(void) {
    const void *me = &t_self;
    if (atomic_load_explicit(&g_lock.owner, memory_order_relaxed) == me) { /* only we store our own address */
        g_lock.depth++;
        return;
    }
    int free_ = 0;
    if (!atomic_compare_exchange_strong_explicit(&g_lock.word, &free_, 1, memory_order_acquire, memory_order_relaxed))
        lock_wait();
    atomic_store_explicit(&g_lock.owner, me, memory_order_relaxed);
    g_lock.depth = 1;
}

static HOT void lock_give(void) {
    if (--g_lock.depth) return;
    atomic_store_explicit(&g_lock.owner, NULL, memory_order_relaxed);
    if (atomic_exchange_explicit(&g_lock.word, 0, memory_order_release) == 2)
        syscall(SYS_futex, &g_lock.word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static HOT void unlock_at_scope_end(int *unused) {
    (void)unused;
    lock_give();
}
#define LOCKED                                                                                     \
    lock_take();                                                                                   \
    int lock_scope_ __attribute__((cleanup(unlock_at_scope_end))) = 0;                            \
    (void)lock_scope_

static int path_well_formed(const char *s) {
    size_t n = strlen(s);
    if (n < 2 || n >= XR_MAX_PATH_LENGTH || s[0] != '/' || s[n - 1] == '/') return 0;
    const char *seg = s + 1;
    for (const char *c = s + 1;; c++) {
        if (*c == '/' || *c == 0) {
            size_t len = (size_t)(c - seg);
            if (len == 0) return 0;
            size_t dots = 0;
            for (const char *d = seg; d < c; d++) dots += *d == '.';
            if (dots == len) return 0; /* "." and ".." components */
            if (*c == 0) return 1;
            seg = c + 1;
        } else if (!(islower((unsigned char)*c) || isdigit((unsigned char)*c) || *c == '-' ||
                     *c == '_' || *c == '.')) {
            return 0;
        }
    }
}

static XrPath path_lookup(const char *s) {
    for (uint32_t i = 0; i < g_npaths; i++)
        if (strcmp(g_paths[i], s) == 0) return i + 1;
    return XR_NULL_PATH;
}

static int slot_of(const char *s) {
    if (strcmp(s, "/user/hand/left") == 0) return 1;
    if (strcmp(s, "/user/hand/right") == 0) return 2;
    if (strcmp(s, "/user/head") == 0) return 3;
    if (strcmp(s, "/user/gamepad") == 0) return 4;
    return -1;
}

static XrPath path_intern(const char *s) {
    XrPath p = path_lookup(s);
    if (p != XR_NULL_PATH || g_npaths >= MAX_PATHS) return p;
    g_paths[g_npaths] = strdup(s);
    g_path_slot[g_npaths] = (signed char)slot_of(s);
    return ++g_npaths;
}

static const char *path_str(XrPath p) {
    return (p >= 1 && p <= g_npaths) ? g_paths[p - 1] : NULL;
}

static void paths_clear(void) {
    for (uint32_t i = 0; i < g_npaths; i++) free(g_paths[i]);
    g_npaths = 0;
}

/* ---- the emulated devices: poses, tracking flags, physical inputs, haptics ---- */

enum { P_HEAD, P_LEFT_AIM, P_LEFT_GRIP, P_RIGHT_AIM, P_RIGHT_GRIP, NPOSE };
enum { F_HEAD, F_LEFT, F_RIGHT, NFLAGS };
enum { IN_TRIGGER, IN_SQUEEZE, IN_STICK, IN_PAD, IN_STICK_CLICK, IN_PAD_CLICK, IN_PAD_TOUCH,
       IN_A, IN_B, IN_MENU, IN_SYSTEM, NIN, IN_NONE = NIN };

static const char *const POSE_PATHS[NPOSE] = {
    "/user/head", "/user/hand/left/input/aim/pose", "/user/hand/left/input/grip/pose",
    "/user/hand/right/input/aim/pose", "/user/hand/right/input/grip/pose"};
static const char *const FLAG_PATHS[NFLAGS] = {"/user/head", "/user/hand/left", "/user/hand/right"};
static const char *const HAND_PATHS[2] = {"/user/hand/left", "/user/hand/right"};

/* Inputs by the generic name the control API and motion files use (after /user/hand/<side>). */
static const struct { const char *suffix; int input; int dims; } INPUT_NAMES[] = {
    {"/input/trigger/value", IN_TRIGGER, 1}, {"/input/trigger", IN_TRIGGER, 1},
    {"/input/trigger/click", IN_TRIGGER, 1}, {"/input/select/click", IN_TRIGGER, 1},
    {"/input/squeeze/value", IN_SQUEEZE, 1}, {"/input/squeeze", IN_SQUEEZE, 1},
    {"/input/squeeze/click", IN_SQUEEZE, 1}, {"/input/squeeze/force", IN_SQUEEZE, 1},
    {"/input/thumbstick", IN_STICK, 2},      {"/input/thumbstick/click", IN_STICK_CLICK, 1},
    {"/input/trackpad", IN_PAD, 2},          {"/input/trackpad/click", IN_PAD_CLICK, 1},
    {"/input/trackpad/touch", IN_PAD_TOUCH, 1}, {"/input/a/click", IN_A, 1},
    {"/input/x/click", IN_A, 1},             {"/input/b/click", IN_B, 1},
    {"/input/y/click", IN_B, 1},             {"/input/menu/click", IN_MENU, 1},
    {"/input/system/click", IN_SYSTEM, 1},
};
#define NINPUT_NAMES (sizeof INPUT_NAMES / sizeof INPUT_NAMES[0])

/* The devices' state: the control API sets g_dev; the motion files apply on top of it at the
 * time an app asks about (devices_at), so g_dev itself never moves with time. */
typedef struct {
    XrPosef pose[NPOSE];
    XrSpaceLocationFlags flags[NFLAGS];
    float in[2][NIN][2];
} Devices;
static HOT_DATA Devices g_dev;
/* Bumped whenever g_dev or a motion file changes: devices_at() keeps the devices it computed for
 * one time while this and the time stay the same. */
static HOT_DATA uint64_t g_dev_gen = 1;

typedef struct {
    int64_t count, stops, duration;
    float amplitude, frequency;
} Haptic;
static Haptic g_haptic[2];

static void devices_default(void) {
    g_dev_gen++;
    static const float pos[NPOSE][3] = {
        {0, 1.6f, 0}, {-0.2f, 1.3f, -0.3f}, {-0.2f, 1.3f, -0.25f}, {0.2f, 1.3f, -0.3f},
        {0.2f, 1.3f, -0.25f}};
    for (int i = 0; i < NPOSE; i++) {
        g_dev.pose[i] = IDENTITY_POSE;
        g_dev.pose[i].position.x = pos[i][0], g_dev.pose[i].position.y = pos[i][1];
        g_dev.pose[i].position.z = pos[i][2];
    }
    for (int i = 0; i < NFLAGS; i++) g_dev.flags[i] = ALL_FLAGS;
    memset(g_dev.in, 0, sizeof g_dev.in);
    memset(g_haptic, 0, sizeof g_haptic);
}

static int pose_index(const char *path) {
    for (int i = 0; i < NPOSE; i++)
        if (strcmp(POSE_PATHS[i], path) == 0) return i;
    return -1;
}

static int flags_index(const char *path) {
    for (int i = 0; i < NFLAGS; i++)
        if (strcmp(FLAG_PATHS[i], path) == 0) return i;
    return -1;
}

static int hand_prefix(const char *path, const char **rest) {
    for (int h = 0; h < 2; h++) {
        size_t n = strlen(HAND_PATHS[h]);
        if (strncmp(path, HAND_PATHS[h], n) == 0) {
            *rest = path + n;
            return h;
        }
    }
    return -1;
}

/* "/user/hand/right/input/trigger/value" → hand*NIN + input; dims through *dims; -1 if unknown */
static int input_index(const char *path, int *dims) {
    const char *rest;
    int h = hand_prefix(path, &rest);
    if (h < 0) return -1;
    for (size_t i = 0; i < NINPUT_NAMES; i++)
        if (strcmp(INPUT_NAMES[i].suffix, rest) == 0) {
            *dims = INPUT_NAMES[i].dims;
            return h * NIN + INPUT_NAMES[i].input;
        }
    return -1;
}

static int input_is_bool(int input) { return input >= IN_STICK_CLICK; }

/* ---- interaction profiles (docs/protocols/openxr.md#bindings and the OpenXR 1.0 interaction profile paths) ---- */

enum { K_BOOL = 1, K_FLOAT, K_VEC2, K_POSE, K_HAPTIC };
enum { M_DIRECT, M_CLICK, M_TOUCH, M_X, M_Y };
enum { SRC_AIM = 100, SRC_GRIP, SRC_HAPTIC, SRC_VIVE_PAD, SRC_VIVE_PAD_CLICK };
#define L 1
#define R 2
#define LR 3

typedef struct {
    const char *suffix;
    uint8_t hands, kind, src, mode;
} Comp;

#define POSES_AND_HAPTIC                                                                           \
    {"/input/grip/pose", LR, K_POSE, SRC_GRIP, M_DIRECT},                                          \
        {"/input/aim/pose", LR, K_POSE, SRC_AIM, M_DIRECT},                                        \
        {"/output/haptic", LR, K_HAPTIC, SRC_HAPTIC, M_DIRECT},                                    \
    {                                                                                              \
        NULL, 0, 0, 0, 0                                                                           \
    }
#define STICK_COMPS(name, src, click)                                                              \
    {"/input/" name, LR, K_VEC2, src, M_DIRECT}, {"/input/" name "/x", LR, K_FLOAT, src, M_X},     \
        {"/input/" name "/y", LR, K_FLOAT, src, M_Y},                                              \
        {"/input/" name "/click", LR, K_BOOL, click, M_DIRECT},                                    \
        {"/input/" name "/touch", LR, K_BOOL, src, M_TOUCH}

static const Comp SIMPLE[] = {
    {"/input/select/click", LR, K_BOOL, IN_TRIGGER, M_CLICK},
    {"/input/menu/click", LR, K_BOOL, IN_MENU, M_DIRECT},
    POSES_AND_HAPTIC};

static const Comp TOUCH[] = {
    {"/input/x/click", L, K_BOOL, IN_A, M_DIRECT}, {"/input/x/touch", L, K_BOOL, IN_A, M_DIRECT},
    {"/input/y/click", L, K_BOOL, IN_B, M_DIRECT}, {"/input/y/touch", L, K_BOOL, IN_B, M_DIRECT},
    {"/input/menu/click", L, K_BOOL, IN_MENU, M_DIRECT},
    {"/input/a/click", R, K_BOOL, IN_A, M_DIRECT}, {"/input/a/touch", R, K_BOOL, IN_A, M_DIRECT},
    {"/input/b/click", R, K_BOOL, IN_B, M_DIRECT}, {"/input/b/touch", R, K_BOOL, IN_B, M_DIRECT},
    {"/input/system/click", R, K_BOOL, IN_SYSTEM, M_DIRECT},
    {"/input/squeeze/value", LR, K_FLOAT, IN_SQUEEZE, M_DIRECT},
    {"/input/trigger/value", LR, K_FLOAT, IN_TRIGGER, M_DIRECT},
    {"/input/trigger/touch", LR, K_BOOL, IN_TRIGGER, M_TOUCH},
    STICK_COMPS("thumbstick", IN_STICK, IN_STICK_CLICK),
    {"/input/thumbrest/touch", LR, K_BOOL, IN_NONE, M_DIRECT},
    POSES_AND_HAPTIC};

static const Comp INDEX[] = {
    {"/input/system/click", LR, K_BOOL, IN_SYSTEM, M_DIRECT},
    {"/input/system/touch", LR, K_BOOL, IN_SYSTEM, M_DIRECT},
    {"/input/a/click", LR, K_BOOL, IN_A, M_DIRECT}, {"/input/a/touch", LR, K_BOOL, IN_A, M_DIRECT},
    {"/input/b/click", LR, K_BOOL, IN_B, M_DIRECT}, {"/input/b/touch", LR, K_BOOL, IN_B, M_DIRECT},
    {"/input/squeeze/value", LR, K_FLOAT, IN_SQUEEZE, M_DIRECT},
    {"/input/squeeze/force", LR, K_FLOAT, IN_SQUEEZE, M_DIRECT},
    {"/input/trigger/click", LR, K_BOOL, IN_TRIGGER, M_CLICK},
    {"/input/trigger/value", LR, K_FLOAT, IN_TRIGGER, M_DIRECT},
    {"/input/trigger/touch", LR, K_BOOL, IN_TRIGGER, M_TOUCH},
    STICK_COMPS("thumbstick", IN_STICK, IN_STICK_CLICK),
    {"/input/trackpad", LR, K_VEC2, IN_PAD, M_DIRECT},
    {"/input/trackpad/x", LR, K_FLOAT, IN_PAD, M_X},
    {"/input/trackpad/y", LR, K_FLOAT, IN_PAD, M_Y},
    {"/input/trackpad/force", LR, K_FLOAT, IN_PAD_CLICK, M_DIRECT},
    {"/input/trackpad/touch", LR, K_BOOL, IN_PAD_TOUCH, M_DIRECT},
    POSES_AND_HAPTIC};

/* The Vive has no stick: its trackpad is the primary 2-axis input. It reads the trackpad state,
 * or the thumbstick state while the trackpad is untouched, so generic motion files drive it too. */
static const Comp VIVE[] = {
    {"/input/system/click", LR, K_BOOL, IN_SYSTEM, M_DIRECT},
    {"/input/squeeze/click", LR, K_BOOL, IN_SQUEEZE, M_CLICK},
    {"/input/menu/click", LR, K_BOOL, IN_MENU, M_DIRECT},
    {"/input/trigger/click", LR, K_BOOL, IN_TRIGGER, M_CLICK},
    {"/input/trigger/value", LR, K_FLOAT, IN_TRIGGER, M_DIRECT},
    STICK_COMPS("trackpad", SRC_VIVE_PAD, SRC_VIVE_PAD_CLICK),
    POSES_AND_HAPTIC};

static const Comp WMR[] = {
    {"/input/menu/click", LR, K_BOOL, IN_MENU, M_DIRECT},
    {"/input/squeeze/click", LR, K_BOOL, IN_SQUEEZE, M_CLICK},
    {"/input/trigger/value", LR, K_FLOAT, IN_TRIGGER, M_DIRECT},
    {"/input/thumbstick", LR, K_VEC2, IN_STICK, M_DIRECT},
    {"/input/thumbstick/x", LR, K_FLOAT, IN_STICK, M_X},
    {"/input/thumbstick/y", LR, K_FLOAT, IN_STICK, M_Y},
    {"/input/thumbstick/click", LR, K_BOOL, IN_STICK_CLICK, M_DIRECT},
    {"/input/trackpad", LR, K_VEC2, IN_PAD, M_DIRECT},
    {"/input/trackpad/x", LR, K_FLOAT, IN_PAD, M_X},
    {"/input/trackpad/y", LR, K_FLOAT, IN_PAD, M_Y},
    {"/input/trackpad/click", LR, K_BOOL, IN_PAD_CLICK, M_DIRECT},
    {"/input/trackpad/touch", LR, K_BOOL, IN_PAD_TOUCH, M_DIRECT},
    POSES_AND_HAPTIC};

typedef struct {
    const char *path, *name;
    const Comp *comps;
} Profile;

enum { PR_SIMPLE, PR_TOUCH, PR_INDEX, PR_VIVE, PR_WMR, NPROFILES };
static const Profile PROFILES[NPROFILES] = {
    {"/interaction_profiles/khr/simple_controller", "Simple Controller", SIMPLE},
    {"/interaction_profiles/oculus/touch_controller", "Oculus Touch Controller", TOUCH},
    {"/interaction_profiles/valve/index_controller", "Valve Index Controller", INDEX},
    {"/interaction_profiles/htc/vive_controller", "HTC Vive Controller", VIVE},
    {"/interaction_profiles/microsoft/motion_controller", "Microsoft Motion Controller", WMR},
};

static int profile_index(const char *path) {
    for (int i = 0; i < NPROFILES; i++)
        if (path && strcmp(PROFILES[i].path, path) == 0) return i;
    return -1;
}

static int kind_fits(int kind, XrActionType type) {
    switch (type) {
    case XR_ACTION_TYPE_BOOLEAN_INPUT:
    case XR_ACTION_TYPE_FLOAT_INPUT: return kind == K_BOOL || kind == K_FLOAT;
    case XR_ACTION_TYPE_VECTOR2F_INPUT: return kind == K_VEC2;
    case XR_ACTION_TYPE_POSE_INPUT: return kind == K_POSE;
    case XR_ACTION_TYPE_VIBRATION_OUTPUT: return kind == K_HAPTIC;
    default: return 0;
    }
}

/*
 * The component a binding suffix names for an action type: the exact path when its kind fits,
 * else (parent-path shorthand, e.g. ".../input/trigger") the preferred child component.
 * type 0 asks only whether the path exists at all (binding validation).
 */
/* OpenXR 1.1 adds the grip surface pose to every controller profile. */
static const Comp GRIP_SURFACE = {"/input/grip_surface/pose", LR, K_POSE, SRC_GRIP, M_DIRECT};

static const Comp *comp_find(const Comp *comps, int hand, const char *suffix, XrActionType type, int v11) {
    if (v11 && (!type || type == XR_ACTION_TYPE_POSE_INPUT) &&
        (strcmp(suffix, GRIP_SURFACE.suffix) == 0 || strcmp(suffix, "/input/grip_surface") == 0))
        return &GRIP_SURFACE;
    static const char *const BOOL_PREF[] = {"click", "value", "force", "touch", NULL};
    static const char *const FLOAT_PREF[] = {"value", "force", "click", "touch", NULL};
    static const char *const POSE_PREF[] = {"pose", NULL};
    static const char *const NO_PREF[] = {NULL};
    int bit = hand == 0 ? L : R;
    size_t n = strlen(suffix);
    for (const Comp *c = comps; c->suffix; c++)
        if ((c->hands & bit) && strcmp(c->suffix, suffix) == 0 && (!type || kind_fits(c->kind, type)))
            return c;
    const char *const *pref = type == XR_ACTION_TYPE_BOOLEAN_INPUT  ? BOOL_PREF
                              : type == XR_ACTION_TYPE_FLOAT_INPUT  ? FLOAT_PREF
                              : type == XR_ACTION_TYPE_POSE_INPUT   ? POSE_PREF
                                                                    : NO_PREF;
    for (const Comp *c = comps; c->suffix; c++) {
        if (!(c->hands & bit) || strncmp(c->suffix, suffix, n) != 0 || c->suffix[n] != '/') continue;
        if (!type) { /* validation: the path names an input whose component is left out */
            static const char *const COMPONENTS[] = {"click", "value", "touch", "force", "x", "y", "pose", NULL};
            for (const char *const *k = COMPONENTS; *k; k++)
                if (strcmp(c->suffix + n + 1, *k) == 0) return c;
            continue;
        }
        for (const char *const *p = pref; *p; p++)
            if (strcmp(c->suffix + n + 1, *p) == 0 && kind_fits(c->kind, type)) {
                /* a better-ranked sibling may come later in the table */
                for (const char *const *q = pref; q != p; q++) {
                    char want[XR_MAX_PATH_LENGTH];
                    snprintf(want, sizeof want, "%s/%s", suffix, *q);
                    for (const Comp *d = comps; d->suffix; d++)
                        if ((d->hands & bit) && strcmp(d->suffix, want) == 0 && kind_fits(d->kind, type))
                            return d;
                }
                return c;
            }
    }
    return NULL;
}

static HOT void comp_read(const Devices *d, const Comp *c, int hand, float out[2]) {
    const float(*in)[2] = d->in[hand];
    float v[2] = {0, 0};
    out[0] = out[1] = 0;
    if (c->src < NIN) {
        v[0] = in[c->src][0], v[1] = in[c->src][1];
    } else if (c->src == SRC_VIVE_PAD) { /* its own trackpad, else the generic thumbstick state */
        const float *p = (in[IN_PAD][0] != 0 || in[IN_PAD][1] != 0) ? in[IN_PAD] : in[IN_STICK];
        v[0] = p[0], v[1] = p[1];
    } else if (c->src == SRC_VIVE_PAD_CLICK) {
        v[0] = fmaxf(in[IN_PAD_CLICK][0], in[IN_STICK_CLICK][0]);
    } else {
        return;
    }
    switch (c->mode) {
    case M_DIRECT: out[0] = v[0], out[1] = v[1]; break;
    case M_CLICK: out[0] = v[0] >= 0.5f ? 1.0f : 0.0f; break;
    case M_TOUCH: {
        int touched = v[0] != 0 || v[1] != 0;
        if (c->src == IN_STICK) touched |= in[IN_STICK_CLICK][0] != 0;
        if (c->src == SRC_VIVE_PAD)
            touched |= in[IN_PAD_TOUCH][0] != 0 || in[IN_PAD_CLICK][0] != 0 || in[IN_STICK_CLICK][0] != 0;
        out[0] = touched ? 1.0f : 0.0f;
        break;
    }
    case M_X: out[0] = v[0]; break;
    case M_Y: out[0] = v[1]; break;
    }
}

/* ---- motion files ---- */

enum { CH_POS, CH_ORI, CH_FLAGS, CH_INPUT };

typedef struct {
    double t;
    float v[4];
} Key;

typedef struct {
    int channel, target, dims, lerp;
    int n, cap;
    Key *keys;
    Arc *arcs; /* CH_ORI: arcs[i] from keys[i] to keys[i + 1] */
} Track;

typedef struct {
    double t;
    char cmd[32];
} Cue;

typedef struct {
    int loaded, frames_timebase, interpolate, loop;
    double rate, end;
    Track *tracks;
    int ntracks, ninputs; /* ninputs: tracks of physical inputs (CH_INPUT), what xrSyncActions reads */
    Cue *cues;
    int ncues, next_cue;
    char path[512];
} Motion;

enum { SLOT_MOTION, SLOT_SCRIPT, NSLOTS };
static HOT_DATA Motion g_motion[NSLOTS];
static int g_motion_by_control[NSLOTS];

static void motion_free(Motion *m) {
    g_dev_gen++; /* (also a successful load: it frees the slot's old motion) */
    for (int i = 0; i < m->ntracks; i++) free(m->tracks[i].keys), free(m->tracks[i].arcs);
    free(m->tracks);
    free(m->cues);
    memset(m, 0, sizeof *m);
}

static Track *motion_track(Motion *m, int channel, int target, int dims, int lerp) {
    for (int i = 0; i < m->ntracks; i++)
        if (m->tracks[i].channel == channel && m->tracks[i].target == target) return &m->tracks[i];
    m->tracks = realloc(m->tracks, sizeof(Track) * (size_t)(m->ntracks + 1));
    Track *t = &m->tracks[m->ntracks++];
    memset(t, 0, sizeof *t);
    m->ninputs += channel == CH_INPUT;
    t->channel = channel, t->target = target, t->dims = dims, t->lerp = lerp;
    return t;
}

static int track_add(Track *t, double time, const float *v) {
    if (t->n && time < t->keys[t->n - 1].t) return -1;
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        t->keys = realloc(t->keys, sizeof(Key) * (size_t)t->cap);
        if (t->channel == CH_ORI) t->arcs = realloc(t->arcs, sizeof(Arc) * (size_t)t->cap);
    }
    Key *k = &t->keys[t->n++];
    k->t = time;
    memset(k->v, 0, sizeof k->v);
    memcpy(k->v, v, sizeof(float) * (size_t)t->dims);
    if (t->channel == CH_ORI && t->n >= 2) arc_of(t->keys[t->n - 2].v, k->v, &t->arcs[t->n - 2]);
    return 0;
}

/* The message of the last failed parse_numbers or range check ("'nan' is not a finite number"). */
static char g_value_error[160];

static int parse_numbers(char **tok, int ntok, double *out) {
    for (int i = 0; i < ntok; i++) {
        char *end;
        if (!tok[i]) return -1;
        out[i] = strtod(tok[i], &end);
        if (*end || end == tok[i] || !isfinite(out[i])) {
            snprintf(g_value_error, sizeof g_value_error, "'%.40s' is not a finite number", tok[i]);
            return -1;
        }
    }
    return 0;
}

/* What a tracking frame can hold (the app's xr.frame.frame_problem has the same limits): a
 * position within 10 km of the stage origin, sticks -1..1, triggers, squeezes and buttons 0..1. */
#define MAX_STAGE_METRES 10000.0

static const char *out_of_range(const char *what, const double *v, int n, double lo, double hi, const char *unit) {
    for (int i = 0; i < n; i++)
        if (!(v[i] >= lo && v[i] <= hi)) {
            snprintf(g_value_error, sizeof g_value_error, "%s %g is outside %g..%g%s", what, v[i], lo, hi, unit);
            return g_value_error;
        }
    return NULL;
}

static int parse_flags(const char *s, XrSpaceLocationFlags *out) {
    char *end;
    unsigned long v = strtoul(s, &end, 0);
    if (*end == 0 && end != s) {
        *out = v & ALL_FLAGS;
        return v == (v & ALL_FLAGS) ? 0 : -1;
    }
    *out = 0;
    if (strcmp(s, "none") == 0) return 0;
    if (strcmp(s, "all") == 0) return (*out = ALL_FLAGS), 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save, *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        if (strcmp(w, "ov") == 0) *out |= XR_SPACE_LOCATION_ORIENTATION_VALID_BIT;
        else if (strcmp(w, "pv") == 0) *out |= XR_SPACE_LOCATION_POSITION_VALID_BIT;
        else if (strcmp(w, "ot") == 0) *out |= XR_SPACE_LOCATION_ORIENTATION_TRACKED_BIT;
        else if (strcmp(w, "pt") == 0) *out |= XR_SPACE_LOCATION_POSITION_TRACKED_BIT;
        else return -1;
    }
    return 0;
}

static const char *const COMMANDS[] = {"exit", "unfocus", "focus", "loss", NULL};

/* One line "<time> <target> ..." of a motion file; returns an error message or NULL. */
static const char *motion_line(Motion *m, char **tok, int ntok) {
    double t;
    if (parse_numbers(tok, 1, &t) || t < 0) return "bad time";
    if (ntok < 2) return "missing target";
    double time = m->frames_timebase ? t : t * m->rate;
    if (!(time <= 1e12)) return "time beyond 10^12 frames";
    if (tok[1][0] == '!') {
        int ok = 0;
        for (const char *const *c = COMMANDS; *c; c++) ok |= strcmp(*c, tok[1] + 1) == 0;
        if (!ok || ntok != 2) return "unknown command (exit, unfocus, focus, loss)";
        if (m->ncues && time < m->cues[m->ncues - 1].t) return "commands out of time order";
        m->cues = realloc(m->cues, sizeof(Cue) * (size_t)(m->ncues + 1));
        m->cues[m->ncues].t = time;
        snprintf(m->cues[m->ncues].cmd, sizeof m->cues[m->ncues].cmd, "%s", tok[1] + 1);
        m->ncues++;
        return NULL;
    }
    double v[7];
    float f[4];
    int pi = pose_index(tok[1]), fi = flags_index(tok[1]), dims;
    if (ntok >= 3 && strcmp(tok[2], "flags") == 0) {
        XrSpaceLocationFlags fl;
        if (fi < 0) return "flags need /user/head, /user/hand/left or /user/hand/right";
        if (ntok != 4 || parse_flags(tok[3], &fl)) return "flags: one value (0xf, all, none or ov,pv,ot,pt)";
        f[0] = (float)fl;
        track_add(motion_track(m, CH_FLAGS, fi, 1, 0), time, f);
        return NULL;
    }
    if (pi >= 0) {
        if (ntok < 3) return "pose channel missing (pos, ypr, quat or pose)";
        const char *ch = tok[2];
        int want = strcmp(ch, "pos") == 0 ? 3 : strcmp(ch, "ypr") == 0 ? 3
                 : strcmp(ch, "quat") == 0 ? 4 : strcmp(ch, "pose") == 0 ? 7 : -1;
        if (want < 0) return "unknown pose channel (pos, ypr, quat, pose, flags)";
        if (ntok != 3 + want) return "wrong number of values";
        if (parse_numbers(tok + 3, want, v)) return g_value_error;
        if ((strcmp(ch, "pos") == 0 || strcmp(ch, "pose") == 0)
            && out_of_range("position", v, 3, -MAX_STAGE_METRES, MAX_STAGE_METRES, " m"))
            return g_value_error;
        if (strcmp(ch, "pos") == 0 || strcmp(ch, "pose") == 0) {
            for (int i = 0; i < 3; i++) f[i] = (float)v[i];
            if (track_add(motion_track(m, CH_POS, pi, 3, 1), time, f)) return "keyframes out of time order";
        }
        if (strcmp(ch, "pos") != 0) {
            double q[4];
            if (ch[0] == 'y') quat_from_ypr(v[0], v[1], v[2], q);
            else memcpy(q, ch[0] == 'q' ? v : v + 3, sizeof q);
            double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
            if (!(n > 1e-6)) return "zero quaternion";
            if (!isfinite(n)) return "quaternion too large to normalise";
            if (!m->interpolate && !(fabs(n * n - 1.0) <= 1e-3)) {
                snprintf(g_value_error, sizeof g_value_error,
                         "quaternion of length %g: with interpolate off it is used as given, so it must be unit", n);
                return g_value_error;
            }
            if (m->interpolate) /* exact samples keep their bits */
                for (int i = 0; i < 4; i++) q[i] /= n;
            for (int i = 0; i < 4; i++) f[i] = (float)q[i];
            if (track_add(motion_track(m, CH_ORI, pi, 4, 1), time, f)) return "keyframes out of time order";
        }
        return NULL;
    }
    int ii = input_index(tok[1], &dims);
    if (ii < 0) return "unknown path";
    if (ntok != 2 + dims) return "wrong number of values";
    if (parse_numbers(tok + 2, dims, v)) return g_value_error;
    if (dims == 2 ? out_of_range("value", v, 2, -1.0, 1.0, "") : out_of_range("value", v, 1, 0.0, 1.0, ""))
        return g_value_error;
    for (int i = 0; i < dims; i++) f[i] = (float)v[i];
    if (track_add(motion_track(m, CH_INPUT, ii, dims, !input_is_bool(ii % NIN)), time, f))
        return "keyframes out of time order";
    return NULL;
}

static int motion_load(Motion *m, const char *path) {
    FILE *fp = fopen(path, "r");
    if (!fp) {
        set_error("%s: %s", path, strerror(errno));
        return -1;
    }
    Motion n;
    memset(&n, 0, sizeof n);
    n.rate = NOMINAL_RATE, n.interpolate = 1;
    snprintf(n.path, sizeof n.path, "%s", path);
    char line[1024];
    int lineno = 0;
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(fp)) {
            /* fgets stopped before a newline: the buffer is full, or a NUL byte hides the rest */
            if (strlen(line) < sizeof line - 1)
                set_error("%s:%d: NUL byte: not a text motion file", path, lineno);
            else
                set_error("%s:%d: line longer than %d characters", path, lineno, (int)sizeof line - 2);
            fclose(fp);
            motion_free(&n);
            return lineno;
        }
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *tok[17], *save;
        int ntok = 0;
        for (char *w = strtok_r(line, " \t\r\n", &save); w; w = strtok_r(NULL, " \t\r\n", &save))
            if (ntok < 16) tok[ntok++] = w;
            else ntok = 17; /* too many: no line has that many fields */
        if (ntok > 16) {
            set_error("%s:%d: too many fields", path, lineno);
            fclose(fp);
            motion_free(&n);
            return lineno;
        }
        if (ntok == 0) continue;
        const char *err = NULL;
        if (isalpha((unsigned char)tok[0][0])) {
            const char *d = tok[0];
            const char *arg = ntok == 2 ? tok[1] : "";
            int on = strcmp(arg, "on") == 0, off = strcmp(arg, "off") == 0;
            if (strcmp(d, "rate") == 0) {
                double r;
                if (ntok != 2 || parse_numbers(tok + 1, 1, &r) || r <= 0) err = "rate: one positive number";
                else n.rate = r;
            } else if (strcmp(d, "timebase") == 0) {
                if (strcmp(arg, "frames") == 0) n.frames_timebase = 1;
                else if (strcmp(arg, "seconds") == 0) n.frames_timebase = 0;
                else err = "timebase: frames or seconds";
            } else if (strcmp(d, "interpolate") == 0 || strcmp(d, "loop") == 0) {
                if (!on && !off) err = "expected on or off";
                else if (d[0] == 'i') n.interpolate = on;
                else n.loop = on;
            } else {
                err = "unknown directive (rate, timebase, interpolate, loop)";
            }
        } else {
            err = motion_line(&n, tok, ntok);
        }
        if (err) {
            set_error("%s:%d: %s", path, lineno, err);
            fclose(fp);
            motion_free(&n);
            return lineno;
        }
    }
    if (ferror(fp)) { /* e.g. a directory: fopen succeeds, reading fails; not an empty motion */
        set_error("%s:%d: cannot read: %s", path, lineno + 1, strerror(errno));
        fclose(fp);
        motion_free(&n);
        return lineno + 1;
    }
    fclose(fp);
    for (int i = 0; i < n.ntracks; i++)
        if (n.tracks[i].n && n.tracks[i].keys[n.tracks[i].n - 1].t > n.end)
            n.end = n.tracks[i].keys[n.tracks[i].n - 1].t;
    n.loaded = 1;
    motion_free(m);
    *m = n;
    return 0;
}

/* nearbyint(x) and llround(x) without a call into libm for 0 <= x < 2^52 (a motion's frame at any
 * time after session begin): right after the app's sleep each libm function is a cold page of code
 * of its own, and these run once per located time. The same results: 2^52 added and taken away
 * leaves x rounded to an integer in the current rounding mode, as nearbyint does (from 2^52 on
 * every double is an integer); llround is floor(x) plus one when the fraction is at least 1/2 (x
 * minus its floor is exact). Any other x (negative, huge, NaN): libm's own. Checked against libm
 * on 80 million values (ties, neighbours of ties, any positive double) in all four rounding modes. */
#define TWO_52 4503599627370496.0
static HOT double round_even(double x) {
    if (!(x >= 0 && x < TWO_52)) return nearbyint(x);
    return copysign((x + TWO_52) - TWO_52, x); /* (+0 for a tiny x rounded downwards, as nearbyint) */
}

static HOT long long round_half_up(double x) {
    if (!(x >= 0 && x < TWO_52)) return llround(x);
    double r = (x + TWO_52) - TWO_52, fl = r > x ? r - 1 : r; /* fl: floor(x) in any rounding mode */
    return (long long)fl + (x - fl >= 0.5);
}

/* The last keyframe at or before f (binary search: a replayed trace has a key per frame), -1 if none. */
static HOT int key_at(const Track *t, double f) {
    int lo = 0, hi = t->n; /* first key with time > f */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (t->keys[mid].t <= f) lo = mid + 1;
        else hi = mid;
    }
    return lo - 1;
}

static HOT void apply_track(const Track *t, double f, int interpolate, Devices *d) {
    float v[4];
    int i = key_at(t, f) + 1; /* keys[i-1].t <= f < keys[i].t */
    if (i == 0) return; /* before its first keyframe a track leaves the value alone */
    if (i == t->n || !interpolate || !t->lerp || t->keys[i - 1].t == f) {
        memcpy(v, t->keys[i - 1].v, sizeof v);
    } else {
        const Key *a = &t->keys[i - 1], *b = &t->keys[i];
        double u = (f - a->t) / (b->t - a->t);
        if (t->channel == CH_ORI) quat_slerp(a->v, b->v, &t->arcs[i - 1], u, v);
        else
            for (int k = 0; k < 4; k++) v[k] = (float)(a->v[k] + (b->v[k] - a->v[k]) * u);
    }
    switch (t->channel) {
    case CH_POS:
        d->pose[t->target].position.x = v[0], d->pose[t->target].position.y = v[1];
        d->pose[t->target].position.z = v[2];
        break;
    case CH_ORI:
        d->pose[t->target].orientation.x = v[0], d->pose[t->target].orientation.y = v[1];
        d->pose[t->target].orientation.z = v[2], d->pose[t->target].orientation.w = v[3];
        break;
    case CH_FLAGS: d->flags[t->target] = (XrSpaceLocationFlags)v[0]; break;
    case CH_INPUT: memcpy(d->in[t->target / NIN][t->target % NIN], v, sizeof(float) * 2); break;
    }
}

/*
 * A motion's own time (in its frames, 1/rate s each) `dt` ns after the session began. XrTime is
 * whole nanoseconds and a frame at 90 Hz is not: a time within 1 ns of a frame's instant is that
 * frame exactly, so keyframe samples read back bit for bit at the frame times the runtime gives.
 */
static HOT double motion_frame(const Motion *m, XrTime dt) {
    double f = (double)dt * m->rate / 1e9;
    double k = round_even(f);
    XrTime d = dt - round_half_up(k * 1e9 / m->rate);
    if (d >= -1 && d <= 1) return k;
    return f;
}

static int run_command(const char *cmd); /* session events, below */

/* The devices as the motions have them `dt` ns after session begin (dt < 0: not begun: g_dev). */
static HOT void motions_at(XrTime dt, Devices *d) {
    *d = g_dev;
    if (dt < 0) return;
    for (int s = 0; s < NSLOTS; s++) {
        const Motion *m = &g_motion[s];
        if (!m->loaded) continue;
        double f = motion_frame(m, dt);
        if (m->loop && m->end > 0) f = fmod(f, m->end);
        for (int i = 0; i < m->ntracks; i++) apply_track(&m->tracks[i], f, m->interpolate, d);
    }
}

/* The devices' inputs as the motions have them `dt` ns after session begin, in a Devices whose
 * poses and flags are not set: what xrSyncActions reads (its sources are inputs, never poses), with
 * no pose interpolated. g_dev itself when no motion has an input track (most motions have none) or
 * no session runs. Valid until the next call. */
static HOT const Devices *inputs_at(XrTime dt) {
    static HOT_DATA Devices d;
    int any = 0;
    for (int s = 0; s < NSLOTS; s++) any |= g_motion[s].loaded && g_motion[s].ninputs;
    if (dt < 0 || !any) return &g_dev;
    memcpy(d.in, g_dev.in, sizeof d.in);
    for (int s = 0; s < NSLOTS; s++) {
        const Motion *m = &g_motion[s];
        if (!m->loaded || !m->ninputs) continue;
        double f = motion_frame(m, dt);
        if (m->loop && m->end > 0) f = fmod(f, m->end);
        for (int i = 0; i < m->ntracks; i++)
            if (m->tracks[i].channel == CH_INPUT) apply_track(&m->tracks[i], f, m->interpolate, &d);
    }
    return &d;
}

/* Run the motions' !commands that are due `dt` ns after session begin (each once per begin). */
static void motion_cues(XrTime dt) {
    for (int s = 0; s < NSLOTS; s++) {
        Motion *m = &g_motion[s];
        if (!m->loaded || dt < 0) continue;
        double f = motion_frame(m, dt);
        while (m->next_cue < m->ncues && m->cues[m->next_cue].t <= f) run_command(m->cues[m->next_cue++].cmd);
    }
}

/* ---- JSON-lines log for apps in a subprocess ---- */

static FILE *g_log;

static void log_line(const char *fmt, ...) {
    if (!g_log) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(g_log, "{\"t\": %lld, ", (long long)now_ns());
    vfprintf(g_log, fmt, ap);
    fputs("}\n", g_log);
    fflush(g_log);
    va_end(ap);
}

/* ---- objects ---- */

enum { OBJ_INSTANCE = 1, OBJ_SESSION, OBJ_SPACE, OBJ_ACTION_SET, OBJ_ACTION, OBJ_SWAPCHAIN };

#define MAX_OBJECTS 1024
/* Each live object with its kind side by side: a handle check reads one array (fewer cache lines). */
static HOT_DATA struct {
    void *p;
    int kind;
} g_objects[MAX_OBJECTS];
static HOT_DATA int g_nobjects; /* slots in use lie below this mark: handle checks stay short */

static void *obj_new(int kind, size_t size) {
    for (int i = 0; i < MAX_OBJECTS; i++)
        if (!g_objects[i].p) {
            g_objects[i].p = calloc(1, size);
            g_objects[i].kind = kind;
            if (i >= g_nobjects) g_nobjects = i + 1;
            return g_objects[i].p;
        }
    return NULL;
}

static HOT int obj_live(const void *p, int kind) {
    if (!p) return 0;
    for (int i = 0; i < g_nobjects; i++)
        if (g_objects[i].p == p) return g_objects[i].kind == kind;
    return 0;
}

static void obj_free(void *p) {
    for (int i = 0; i < g_nobjects; i++)
        if (g_objects[i].p == p) g_objects[i].p = NULL;
    while (g_nobjects && !g_objects[g_nobjects - 1].p) g_nobjects--;
    free(p);
}

typedef struct {
    int hand;
    const Comp *comp;
    XrPath path;
} Source;

#define NSLOT 5 /* action state slots: all, left, right, head, gamepad */
typedef struct {
    float v[2];
    int active, changed;
    XrTime last;
} ActState;

#define MAX_SUB 4
#define MAX_SOURCES 16
/* What xrSyncActions and the state reads touch each frame first (fewer cache lines, cold); the
 * names, read only when actions are made, last. */
struct XrAction_T {
    XrActionSet set;
    XrActionType type;
    uint32_t nsub;
    int nsrc;
    XrPath sub[MAX_SUB];
    ActState st[NSLOT];
    Source src[MAX_SOURCES];
    char name[XR_MAX_ACTION_NAME_SIZE], lname[XR_MAX_LOCALIZED_ACTION_NAME_SIZE];
};

#define MAX_ACTIONS 64
struct XrActionSet_T {
    XrInstance inst;
    uint32_t priority;
    int attached;
    int nactions;
    XrAction actions[MAX_ACTIONS];
    char name[XR_MAX_ACTION_SET_NAME_SIZE], lname[XR_MAX_LOCALIZED_ACTION_SET_NAME_SIZE];
};

typedef struct {
    XrAction action;
    XrPath path;
} Binding;

#define MAX_SETS 32
struct XrInstance_T {
    XrVersion api;
    int ext_headless, ext_timespec, ext_gl, ext_refresh, ext_win32time;
    int gl_requirements_queried;
    XrActionSet sets[MAX_SETS];
    int nsets;
    Binding *suggested[NPROFILES];
    uint32_t nsuggested[NPROFILES];
};

struct XrSession_T {
    XrInstance inst;
    int headless;
    void *glx_context;
    XrSessionState state;
    int running, exit_requested, lost, first_frame_ended;
    int64_t frame;          /* frames waited since begin, -1 before the first */
    int waited, begun;      /* frame-loop call order */
    XrTime epoch;           /* the runtime clock at xrBeginSession: motion time 0, frame slot 0 */
    int64_t slot;           /* the display's next frame slot (paced xrWaitFrame) */
    int64_t queries;        /* time queries since begin (the step clock's count) */
    XrTime last_display, begun_display;
    XrActionSet attached[MAX_SETS];
    int nattached;
    int profile[2];         /* current interaction profile per hand, -1 none */
    int refresh_requested;  /* xrRequestDisplayRefreshRateFB went through at least once */
};

struct XrSpace_T {
    XrSession session;
    int is_action;
    XrReferenceSpaceType ref;
    XrAction action;
    XrPath sub;
    XrPosef offset;
};

#define MAX_IMAGES 3
struct XrSwapchain_T {
    XrSession session;
    int64_t format;
    uint32_t width, height, layers;
    uint32_t tex[MAX_IMAGES];
    uint32_t queue[MAX_IMAGES]; /* acquired images, oldest first */
    int nqueued, waited, next;
    int released; /* the image last released: what a layer submitted this frame shows */
};

static HOT_DATA XrInstance g_instance;
static HOT_DATA XrSession g_session;

/* What the last xrSyncActions read, when it left every action's state as it was and none changed
 * (so the time was not used): the same inputs (bit for bit) and the same active sets give every
 * action that same state again, so a sync that finds them touches no action. Forgotten whenever
 * actions, sets, bindings or sessions change (sync_forget). */
static HOT_DATA struct {
    int valid;
    XrSession session;
    uint64_t active; /* bit k: attached set k synced active in a focused session */
    float in[2][NIN][2];
} g_sync_memo;

static HOT void sync_forget(void) { g_sync_memo.valid = 0; }

/* 1 when this sync would leave every action's state as it is (g_sync_memo). */
static HOT int sync_unchanged(XrSession s, uint64_t active, const Devices *d) {
    if (!g_sync_memo.valid || g_sync_memo.session != s || g_sync_memo.active != active) return 0;
    /* bit for bit, as memcmp would, without its call (a cold libc page after the app's sleep) */
    uint32_t a[sizeof d->in / 4], b[sizeof d->in / 4], diff = 0;
    memcpy(a, g_sync_memo.in, sizeof a), memcpy(b, d->in, sizeof b);
    for (size_t i = 0; i < sizeof a / 4; i++) diff |= a[i] ^ b[i];
    return diff == 0;
}

/* Note a sync that left every state as it was, for the next. */
static HOT void sync_note(XrSession s, uint64_t active, const Devices *d) {
    g_sync_memo.session = s, g_sync_memo.active = active;
    memcpy(g_sync_memo.in, d->in, sizeof d->in);
    g_sync_memo.valid = 1;
}

/* Control state (survives instances while the test's ctypes handle keeps the library loaded). */
static HOT_DATA int g_throttle = 1, g_throttle_set;
static int g_emulated = PR_TOUCH, g_emulated_set;
static int g_stage = 1, g_hmd = 1;
static HOT_DATA int64_t g_frames_ended, g_frames_waited;

/* ---- behaviour profiles: which real runtime the mock imitates (xr/mockrt/README.md) ---- */

enum { RT_MONADO, RT_STEAMVR, RT_STRICT, RT_MONADO25, RT_STEAMVR_WIN, RT_META_PC, NRT };
static const char *const RT_NAMES[NRT] = {"monado", "steamvr", "strict", "monado25", "steamvr-windows", "meta-pc"};
#define RT_LIST "monado, monado25, steamvr, steamvr-windows, meta-pc, strict"

/* The extensions a real runtime offers that headcast uses or checks, one bit each (EXTENSIONS). */
enum { EXT_GL = 1, EXT_HEADLESS = 2, EXT_TIMESPEC = 4, EXT_REFRESH = 8, EXT_WIN32TIME = 16 };
/* Each profile's list is the imitated runtime's own, restricted to those five:
 *  monado, monado25, strict: Monado 25.0.0 (Debian 13's monado-service + libopenxr1-monado, simulated
 *      HMD), as measured by tests/monado (xrEnumerateInstanceExtensionProperties); Monado 21 took the
 *      same XR_FB_display_refresh_rate branch (issue 23).
 *  steamvr: SteamVR 2.19 for Linux as the Khronos OpenXR runtime inventory lists it
 *      (KhronosGroup/OpenXR-Inventory, runtimes/valve_steamvr_linux64.json) without XR_MND_headless:
 *      it stands for the runtimes where every session needs graphics.
 *  steamvr-windows: SteamVR 2.19 for Windows (the inventory's runtimes/valve_steamvr_windows.json):
 *      XR_MND_headless with XR_KHR_win32_convert_performance_counter_time and no
 *      XR_KHR_convert_timespec_time.
 *  meta-pc: Meta's PC runtime, Quest Link (the inventory's runtimes/meta_pc.json): no XR_MND_headless. */
static const unsigned RT_EXTENSIONS[NRT] = {
    [RT_MONADO] = EXT_GL | EXT_HEADLESS | EXT_TIMESPEC | EXT_REFRESH,
    [RT_STEAMVR] = EXT_GL | EXT_TIMESPEC | EXT_REFRESH,
    [RT_STRICT] = EXT_GL | EXT_HEADLESS | EXT_TIMESPEC | EXT_REFRESH,
    [RT_MONADO25] = EXT_GL | EXT_HEADLESS | EXT_TIMESPEC | EXT_REFRESH,
    [RT_STEAMVR_WIN] = EXT_GL | EXT_HEADLESS | EXT_WIN32TIME | EXT_REFRESH,
    [RT_META_PC] = EXT_GL | EXT_TIMESPEC | EXT_WIN32TIME | EXT_REFRESH,
};
/* Monado (21 and 25) answers xrGetDisplayRefreshRateFB with 0.0 in a headless session (issue 23:
 * "c_float(0.0)"): there is no display; the others report the display's rate. */
static int rt_headless_rate_zero(int rt) { return rt == RT_MONADO || rt == RT_MONADO25 || rt == RT_STRICT; }
/* Monado 25 focuses a running headless session (READY, SYNCHRONIZED, VISIBLE, FOCUSED at begin);
 * Monado 21 left it READY. steamvr-windows does as Monado 25: an assumption (SteamVR's headless
 * states were never measured here). */
static int rt_headless_focuses(int rt) { return rt == RT_MONADO25 || rt == RT_STEAMVR_WIN; }
static HOT_DATA int g_rt = RT_MONADO, g_rt_set;

static int rt_index(const char *name) {
    for (int i = 0; i < NRT; i++)
        if (name && strcmp(RT_NAMES[i], name) == 0) return i;
    return -1;
}

/* The profile from HEADCAST_MOCK_PROFILE_RUNTIME unless the control API chose one; -1 if the
 * variable names none (xrCreateInstance then fails, saying so on stderr). */
static int rt_from_env(void) {
    if (g_rt_set) return g_rt;
    const char *v = getenv("HEADCAST_MOCK_PROFILE_RUNTIME");
    int i = (v && *v) ? rt_index(v) : RT_MONADO;
    if (i >= 0) g_rt = i;
    return i;
}

/* ---- the runtime's clock: XrTime, what xrLocateSpace interpolates motion at ----
 * REAL: CLOCK_MONOTONIC in ns. FROZEN: stands at g_virtual until the control API moves it.
 * STEP: stands still between the app's time queries (xrWaitFrame, timespec -> XrTime); each query
 * moves it to the session's next frame slot, 0, 1, 2, ... frames after xrBeginSession, so a test
 * sees the same motion frame on the n-th query whatever the machine's load. */
enum { CLOCK_REAL, CLOCK_FROZEN, CLOCK_STEP };
static HOT_DATA int g_clock = CLOCK_REAL, g_clock_set;
static HOT_DATA XrTime g_virtual;

static HOT XrTime runtime_now(void) { return g_clock == CLOCK_REAL ? now_ns() : g_virtual; }

/* Frame slot k of a running session: k display periods after its begin (90 Hz exactly on average). */
static XrTime slot_time(XrSession s, int64_t k) { return s->epoch + llround((double)k * 1e9 / NOMINAL_RATE); }

/* The clock read by an app's time query; the step clock advances to the next slot here. */
static XrTime clock_query(void) {
    if (g_clock == CLOCK_STEP && g_session && g_session->running)
        g_virtual = slot_time(g_session, g_session->queries++);
    return runtime_now();
}

/* Motion commands (!focus, !exit, ...) that fell due by the runtime clock. */
static HOT int cues_pending(void) {
    for (int s = 0; s < NSLOTS; s++)
        if (g_motion[s].loaded && g_motion[s].next_cue < g_motion[s].ncues) return 1;
    return 0;
}

static HOT void session_tick(void) { /* no cue left (most motions have none): no clock read */
    if (g_session && g_session->running && cues_pending()) motion_cues(runtime_now() - g_session->epoch);
}

/* Time since the running session's begin (motion time), -1 when no session runs. */
static HOT XrTime session_dt(XrTime t) {
    return (g_session && g_session->running) ? t - g_session->epoch : -1;
}

/* ---- events ---- */

#define MAX_EVENTS 64
static XrEventDataBuffer g_events[MAX_EVENTS];
static HOT_DATA int g_ev_head, g_ev_count;
static HOT_DATA uint32_t g_ev_lost; /* dropped because the app did not poll: reported as EVENTS_LOST */

static void push_event(const void *ev, size_t size) {
    if (g_ev_count == MAX_EVENTS) { /* drop the oldest */
        g_ev_head = (g_ev_head + 1) % MAX_EVENTS;
        g_ev_count--;
        g_ev_lost++;
    }
    XrEventDataBuffer *slot = &g_events[(g_ev_head + g_ev_count++) % MAX_EVENTS];
    memset(slot, 0, sizeof *slot);
    memcpy(slot, ev, size);
}

static const char *state_name(XrSessionState s) {
    switch (s) {
#define STATE_CASE(name, value) case name: return #name + 17;
        XR_LIST_ENUM_XrSessionState(STATE_CASE)
#undef STATE_CASE
    default: return "UNKNOWN";
    }
}

static void set_state(XrSession s, XrSessionState st) {
    s->state = st;
    XrEventDataSessionStateChanged ev = {XR_TYPE_EVENT_DATA_SESSION_STATE_CHANGED, NULL, s, st, runtime_now()};
    push_event(&ev, sizeof ev);
    log_line("\"event\": \"state\", \"state\": \"%s\"", state_name(st));
}

static int g_want_focus = 1;
/* HEADCAST_MOCK_HEADLESS_FOCUS=1: a headless session is focused at xrBeginSession, as a runtime
 * may do (Monado 25 does: the monado25 and steamvr-windows profiles focus it anyway); for mock runs
 * that want the motion's inputs. */
static int g_headless_focus;

/* SYNCHRONIZED → VISIBLE → FOCUSED (or stop at VISIBLE while the control API says unfocused) */
static void go_visible(XrSession s) {
    if (s->state == XR_SESSION_STATE_READY) set_state(s, XR_SESSION_STATE_SYNCHRONIZED);
    if (s->state == XR_SESSION_STATE_SYNCHRONIZED) set_state(s, XR_SESSION_STATE_VISIBLE);
    if (s->state == XR_SESSION_STATE_VISIBLE && g_want_focus) set_state(s, XR_SESSION_STATE_FOCUSED);
}

static void go_stopping(XrSession s) {
    s->exit_requested = 1;
    /* a running headless session that stayed READY passes SYNCHRONIZED on its way out (as Monado) */
    if (s->state == XR_SESSION_STATE_READY) set_state(s, XR_SESSION_STATE_SYNCHRONIZED);
    if (s->state == XR_SESSION_STATE_FOCUSED) set_state(s, XR_SESSION_STATE_VISIBLE);
    if (s->state == XR_SESSION_STATE_VISIBLE) set_state(s, XR_SESSION_STATE_SYNCHRONIZED);
    if (s->state == XR_SESSION_STATE_SYNCHRONIZED) set_state(s, XR_SESSION_STATE_STOPPING);
}

static int run_command(const char *cmd) {
    XrSession s = g_session;
    if (strcmp(cmd, "focus") == 0) {
        g_want_focus = 1;
        if (s && s->state == XR_SESSION_STATE_VISIBLE) set_state(s, XR_SESSION_STATE_FOCUSED);
        /* the runtime may give a running headless session focus (real ones leave it READY) */
        if (s && s->running && s->headless && s->state == XR_SESSION_STATE_READY) go_visible(s);
    } else if (strcmp(cmd, "unfocus") == 0) {
        g_want_focus = 0;
        if (s && s->state == XR_SESSION_STATE_FOCUSED) set_state(s, XR_SESSION_STATE_VISIBLE);
    } else if (strcmp(cmd, "exit") == 0) {
        if (!s || s->lost) return 0;
        if (s->running) {
            go_stopping(s);
        } else if (s->state == XR_SESSION_STATE_READY || s->state == XR_SESSION_STATE_IDLE) {
            s->exit_requested = 1;
            if (s->state == XR_SESSION_STATE_READY) set_state(s, XR_SESSION_STATE_IDLE);
            set_state(s, XR_SESSION_STATE_EXITING);
        }
    } else if (strcmp(cmd, "loss") == 0) {
        if (!s || s->lost) return 0;
        s->lost = 1;
        set_state(s, XR_SESSION_STATE_LOSS_PENDING);
    } else {
        set_error("unknown command %s (exit, unfocus, focus, loss)", cmd);
        return -1;
    }
    return 0;
}

/* ---- OpenGL through the app's current GLX context, resolved at run time ---- */

#define GL_TEXTURE_2D 0x0DE1
#define GL_TEXTURE_2D_ARRAY 0x8C1A
#define GL_TEXTURE_BINDING_2D 0x8069
#define GL_TEXTURE_BINDING_2D_ARRAY 0x8C1D
#define GL_TEXTURE_MIN_FILTER 0x2801
#define GL_TEXTURE_MAG_FILTER 0x2800
#define GL_LINEAR 0x2601
#define GL_RGBA 0x1908
#define GL_UNSIGNED_BYTE 0x1401
#define GL_UNSIGNED_INT 0x1405
#define GL_FLOAT 0x1406
#define GL_DEPTH_COMPONENT 0x1902
#define GL_DEPTH_STENCIL 0x84F9
#define GL_UNSIGNED_INT_24_8 0x84FA
#define GL_RGBA8 0x8058
#define GL_SRGB8_ALPHA8 0x8C43
#define GL_DEPTH_COMPONENT24 0x81A6
#define GL_DEPTH_COMPONENT32F 0x8CAC
#define GL_DEPTH24_STENCIL8 0x88F0
#define GL_READ_FRAMEBUFFER 0x8CA8
#define GL_READ_FRAMEBUFFER_BINDING 0x8CAA
#define GL_COLOR_ATTACHMENT0 0x8CE0
#define GL_PIXEL_PACK_BUFFER 0x88EB
#define GL_PIXEL_PACK_BUFFER_BINDING 0x88ED
#define GL_PACK_ALIGNMENT 0x0D05

static const int64_t GL_FORMATS[] = {GL_SRGB8_ALPHA8, GL_RGBA8, GL_DEPTH_COMPONENT24,
                                     GL_DEPTH_COMPONENT32F, GL_DEPTH24_STENCIL8};
#define NGL_FORMATS (sizeof GL_FORMATS / sizeof GL_FORMATS[0])

static struct {
    int loaded;
    void *(*GetCurrentContext)(void);
    void (*GenTextures)(int, uint32_t *);
    void (*DeleteTextures)(int, const uint32_t *);
    void (*BindTexture)(uint32_t, uint32_t);
    void (*TexParameteri)(uint32_t, uint32_t, int);
    void (*GetIntegerv)(uint32_t, int *);
    void (*TexImage2D)(uint32_t, int, int, int, int, int, uint32_t, uint32_t, const void *);
    void (*TexImage3D)(uint32_t, int, int, int, int, int, int, uint32_t, uint32_t, const void *);
    void (*GenFramebuffers)(int, uint32_t *);
    void (*DeleteFramebuffers)(int, const uint32_t *);
    void (*BindFramebuffer)(uint32_t, uint32_t);
    void (*FramebufferTexture2D)(uint32_t, uint32_t, uint32_t, uint32_t, int);
    void (*FramebufferTextureLayer)(uint32_t, uint32_t, uint32_t, int, int);
    void (*BindBuffer)(uint32_t, uint32_t);
    void (*PixelStorei)(uint32_t, int);
    void (*ReadPixels)(int, int, int, int, uint32_t, uint32_t, void *);
} gl;

static int gl_load(void) {
    if (gl.loaded) return 0;
    void *lib = dlopen("libGL.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libGL.so.1", RTLD_LAZY);
    if (!lib) return -1;
    void *(*gpa)(const unsigned char *) = (void *(*)(const unsigned char *))dlsym(lib, "glXGetProcAddressARB");
    gl.GetCurrentContext = (void *(*)(void))dlsym(lib, "glXGetCurrentContext");
    if (!gpa || !gl.GetCurrentContext) return -1;
#define GLFN(field, name) *(void **)&gl.field = gpa((const unsigned char *)name)
    GLFN(GenTextures, "glGenTextures");
    GLFN(DeleteTextures, "glDeleteTextures");
    GLFN(BindTexture, "glBindTexture");
    GLFN(TexParameteri, "glTexParameteri");
    GLFN(GetIntegerv, "glGetIntegerv");
    GLFN(TexImage2D, "glTexImage2D");
    GLFN(TexImage3D, "glTexImage3D");
    GLFN(GenFramebuffers, "glGenFramebuffers");
    GLFN(DeleteFramebuffers, "glDeleteFramebuffers");
    GLFN(BindFramebuffer, "glBindFramebuffer");
    GLFN(FramebufferTexture2D, "glFramebufferTexture2D");
    GLFN(FramebufferTextureLayer, "glFramebufferTextureLayer");
    GLFN(BindBuffer, "glBindBuffer");
    GLFN(PixelStorei, "glPixelStorei");
    GLFN(ReadPixels, "glReadPixels");
#undef GLFN
    if (!gl.GenTextures || !gl.DeleteTextures || !gl.BindTexture || !gl.TexParameteri ||
        !gl.GetIntegerv || !gl.TexImage2D || !gl.TexImage3D || !gl.GenFramebuffers || !gl.DeleteFramebuffers ||
        !gl.BindFramebuffer || !gl.FramebufferTexture2D || !gl.FramebufferTextureLayer || !gl.BindBuffer ||
        !gl.PixelStorei || !gl.ReadPixels)
        return -1;
    gl.loaded = 1;
    return 0;
}

/* ---- helpers for the API ---- */

#define CHECK_INSTANCE(i) if (!obj_live(i, OBJ_INSTANCE)) return XR_ERROR_HANDLE_INVALID
#define CHECK_SESSION(s) if (!obj_live(s, OBJ_SESSION)) return XR_ERROR_HANDLE_INVALID
#define CHECK_TYPE(p, t) if (!(p) || (p)->type != (t)) return XR_ERROR_VALIDATION_FAILURE

/* The two-call idiom: report the count, fill when the capacity allows. */
#define TWO_CALL(capacity, countOut, needed, array)                                                \
    do {                                                                                           \
        if (!(countOut) || ((capacity) && !(array))) return XR_ERROR_VALIDATION_FAILURE;           \
        *(countOut) = (uint32_t)(needed);                                                          \
        if ((capacity) == 0) return XR_SUCCESS;                                                    \
        if ((capacity) < (uint32_t)(needed)) return XR_ERROR_SIZE_INSUFFICIENT;                    \
    } while (0)

static XrResult copy_string(const char *s, uint32_t capacity, uint32_t *countOut, char *buffer) {
    size_t n = strlen(s) + 1;
    TWO_CALL(capacity, countOut, n, buffer);
    memcpy(buffer, s, n);
    return XR_SUCCESS;
}

/* ---- instance ---- */

/* Declared by openxr_platform.h only with XR_USE_PLATFORM_WIN32 (windows.h): LARGE_INTEGER is an
 * int64. The mock's "performance counter" is CLOCK_MONOTONIC in ns (a 1 GHz counter): what Python's
 * time.perf_counter_ns() reads on Linux, so an app converts it as it would QueryPerformanceCounter. */
#define WIN32_TIME_EXTENSION_NAME "XR_KHR_win32_convert_performance_counter_time"

/* In bit order (EXT_GL, EXT_HEADLESS, ...). */
static const XrExtensionProperties EXTENSIONS[] = {
    {XR_TYPE_EXTENSION_PROPERTIES, NULL, XR_KHR_OPENGL_ENABLE_EXTENSION_NAME, 10},
    {XR_TYPE_EXTENSION_PROPERTIES, NULL, XR_MND_HEADLESS_EXTENSION_NAME, 2},
    {XR_TYPE_EXTENSION_PROPERTIES, NULL, XR_KHR_CONVERT_TIMESPEC_TIME_EXTENSION_NAME, 1},
    {XR_TYPE_EXTENSION_PROPERTIES, NULL, XR_FB_DISPLAY_REFRESH_RATE_EXTENSION_NAME, 1},
    {XR_TYPE_EXTENSION_PROPERTIES, NULL, WIN32_TIME_EXTENSION_NAME, 1},
};
#define NEXTENSIONS (sizeof EXTENSIONS / sizeof EXTENSIONS[0])

/* Offered by the current profile (RT_EXTENSIONS). */
static int extension_offered(const char *name) {
    for (uint32_t i = 0; i < NEXTENSIONS; i++)
        if (strcmp(EXTENSIONS[i].extensionName, name) == 0) return (RT_EXTENSIONS[g_rt] >> i) & 1;
    return 0;
}

/* ---- XR_FB_display_refresh_rate: the display's rates, the current one, changes on request ---- */
static const float REFRESH_RATES[] = {60.0f, 72.0f, 90.0f, 120.0f};
#define NREFRESH (sizeof REFRESH_RATES / sizeof REFRESH_RATES[0])
static float g_refresh = (float)NOMINAL_RATE; /* the display's current rate (control API: set_refresh_rate) */

API xrEnumerateApiLayerProperties(uint32_t capacity, uint32_t *countOut, XrApiLayerProperties *props) {
    LOCKED;
    (void)props, (void)capacity;
    if (!countOut) return XR_ERROR_VALIDATION_FAILURE;
    *countOut = 0; /* the runtime brings no API layers */
    return XR_SUCCESS;
}

API xrEnumerateInstanceExtensionProperties(const char *layerName, uint32_t capacity,
                                           uint32_t *countOut, XrExtensionProperties *props) {
    LOCKED;
    if (layerName) return XR_ERROR_API_LAYER_NOT_PRESENT;
    rt_from_env();
    uint32_t n = 0;
    const XrExtensionProperties *offered[NEXTENSIONS];
    for (uint32_t i = 0; i < NEXTENSIONS; i++)
        if (extension_offered(EXTENSIONS[i].extensionName)) offered[n++] = &EXTENSIONS[i];
    TWO_CALL(capacity, countOut, n, props);
    for (uint32_t i = 0; i < n; i++) {
        if (props[i].type != XR_TYPE_EXTENSION_PROPERTIES) return XR_ERROR_VALIDATION_FAILURE;
        memcpy(props[i].extensionName, offered[i]->extensionName, XR_MAX_EXTENSION_NAME_SIZE);
        props[i].extensionVersion = offered[i]->extensionVersion;
    }
    return XR_SUCCESS;
}

/* ---- fault injection, for tests of an app's error handling ----
 * HEADCAST_MOCK_FAIL=<function>:<result>[:<after>[:<times>]] (or mockxr_fail): <function> (one of
 * FAILABLE) returns <result> (an XrResult: -2 = XR_ERROR_RUNTIME_FAILURE is allowed for every
 * function) once <after> calls of it went through, <times> times (0: every call from then on).
 * A result the registry does not allow for that function is the test's choice, not the mock's. */
static const char *const FAILABLE[] = {"xrCreateSession", "xrBeginSession", "xrPollEvent", "xrWaitFrame",
                                       "xrBeginFrame", "xrEndFrame", "xrSyncActions", "xrLocateSpace"};
static HOT_DATA struct {
    char function[32];
    XrResult result;
    int64_t after, times, calls, failed;
    int by_control, env_read; /* the variable arms it once per process (or reset), not per instance */
} g_fail;

static int set_fail(const char *function, int result, int64_t after, int64_t times) {
    memset(g_fail.function, 0, sizeof g_fail.function);
    g_fail.calls = g_fail.failed = 0;
    if (!function || !*function) return 0; /* cleared */
    int known = 0;
    for (size_t i = 0; i < sizeof FAILABLE / sizeof *FAILABLE; i++) known |= strcmp(function, FAILABLE[i]) == 0;
    if (!known || result >= 0 || after < 0 || times < 0)
        return set_error("fail: %s:%d:%lld:%lld: want one of xrCreateSession, xrBeginSession, xrPollEvent, "
                         "xrWaitFrame, xrBeginFrame, xrEndFrame, xrSyncActions, xrLocateSpace, a negative "
                         "XrResult, after >= 0, times >= 0", function, result, (long long)after,
                         (long long)times), -1;
    snprintf(g_fail.function, sizeof g_fail.function, "%s", function);
    g_fail.result = (XrResult)result, g_fail.after = after, g_fail.times = times;
    return 0;
}

static void fail_from_env(void) {
    const char *v = getenv("HEADCAST_MOCK_FAIL");
    if (g_fail.by_control || g_fail.env_read || !v || !*v) return;
    g_fail.env_read = 1;
    char function[32] = "";
    int result = 0;
    long long after = 0, times = 0;
    if (sscanf(v, "%31[^:]:%d:%lld:%lld", function, &result, &after, &times) < 2 ||
        set_fail(function, result, after, times) != 0)
        fprintf(stderr, "MockXR: HEADCAST_MOCK_FAIL=%s ignored: %s\n", v, g_error);
}

/* The injected failure for this call of `function`, or XR_SUCCESS. */
static HOT XrResult injected(const char *function) {
    if (!g_fail.function[0] || strcmp(function, g_fail.function) != 0) return XR_SUCCESS;
    if (g_fail.calls++ < g_fail.after) return XR_SUCCESS;
    if (g_fail.times && g_fail.failed >= g_fail.times) return XR_SUCCESS;
    g_fail.failed++;
    return g_fail.result;
}
#define INJECT(function)                                                                           \
    do {                                                                                           \
        XrResult injected_ = injected(function);                                                   \
        if (injected_ != XR_SUCCESS) return injected_;                                             \
    } while (0)

static void control_from_env(void) {
    const char *v = getenv("HEADCAST_MOCK_CLOCK");
    if (!g_clock_set) {
        g_clock = (v && strcmp(v, "step") == 0) ? CLOCK_STEP : CLOCK_REAL;
        g_virtual = now_ns();
    }
    v = getenv("HEADCAST_MOCK_HEADLESS_FOCUS");
    g_headless_focus = v && strcmp(v, "1") == 0;
    v = getenv("HEADCAST_MOCK_THROTTLE");
    if (!g_throttle_set) g_throttle = !(v && strcmp(v, "0") == 0);
    v = getenv("HEADCAST_MOCK_PROFILE");
    if (!g_emulated_set) g_emulated = profile_index(v) >= 0 ? profile_index(v) : PR_TOUCH;
    v = getenv("HEADCAST_MOCK_LOG");
    if (v && *v && !g_log) g_log = fopen(v, "a");
    fail_from_env();
}

API xrCreateInstance(const XrInstanceCreateInfo *info, XrInstance *out) {
    LOCKED;
    CHECK_TYPE(info, XR_TYPE_INSTANCE_CREATE_INFO);
    if (!out) return XR_ERROR_VALIDATION_FAILURE;
    XrVersion v = info->applicationInfo.apiVersion;
    if (XR_VERSION_MAJOR(v) != 1 || XR_VERSION_MINOR(v) > 1) return XR_ERROR_API_VERSION_UNSUPPORTED;
    if (info->applicationInfo.applicationName[0] == 0) return XR_ERROR_NAME_INVALID;
    if (rt_from_env() < 0) {
        fprintf(stderr, "MockXR: HEADCAST_MOCK_PROFILE_RUNTIME=%s: not one of " RT_LIST "\n",
                getenv("HEADCAST_MOCK_PROFILE_RUNTIME"));
        return XR_ERROR_RUNTIME_FAILURE;
    }
    const char *clock = getenv("HEADCAST_MOCK_CLOCK");
    if (clock && *clock && strcmp(clock, "step") != 0 && strcmp(clock, "real") != 0) {
        fprintf(stderr, "MockXR: HEADCAST_MOCK_CLOCK=%s: not real or step\n", clock);
        return XR_ERROR_RUNTIME_FAILURE;
    }
    int headless = 0, timespec = 0, glx = 0, refresh = 0, win32time = 0;
    if (info->enabledExtensionCount && !info->enabledExtensionNames) return XR_ERROR_VALIDATION_FAILURE;
    for (uint32_t i = 0; i < info->enabledExtensionCount; i++) {
        const char *e = info->enabledExtensionNames[i];
        if (!extension_offered(e)) return XR_ERROR_EXTENSION_NOT_PRESENT;
        if (strcmp(e, XR_MND_HEADLESS_EXTENSION_NAME) == 0) headless = 1;
        else if (strcmp(e, XR_KHR_CONVERT_TIMESPEC_TIME_EXTENSION_NAME) == 0) timespec = 1;
        else if (strcmp(e, XR_KHR_OPENGL_ENABLE_EXTENSION_NAME) == 0) glx = 1;
        else if (strcmp(e, XR_FB_DISPLAY_REFRESH_RATE_EXTENSION_NAME) == 0) refresh = 1;
        else if (strcmp(e, WIN32_TIME_EXTENSION_NAME) == 0) win32time = 1;
        else return XR_ERROR_EXTENSION_NOT_PRESENT;
    }
    if (g_instance) return XR_ERROR_LIMIT_REACHED;
    control_from_env();
    const char *envs[NSLOTS] = {"HEADCAST_MOCK_MOTION", "HEADCAST_MOCK_SCRIPT"};
    for (int i = 0; i < NSLOTS; i++) { /* the environment applies unless the control API loaded one */
        const char *p = getenv(envs[i]);
        if (g_motion_by_control[i]) continue;
        if (!p || !*p) motion_free(&g_motion[i]);
        else if (motion_load(&g_motion[i], p) != 0) {
            fprintf(stderr, "MockXR: %s: %s\n", envs[i], g_error);
            return XR_ERROR_RUNTIME_FAILURE;
        }
    }
    XrInstance inst = obj_new(OBJ_INSTANCE, sizeof *inst);
    if (!inst) return XR_ERROR_OUT_OF_MEMORY;
    inst->api = v;
    inst->ext_headless = headless, inst->ext_timespec = timespec, inst->ext_gl = glx;
    inst->ext_refresh = refresh, inst->ext_win32time = win32time;
    g_instance = inst;
    g_ev_head = g_ev_count = 0, g_ev_lost = 0;
    *out = inst;
    log_line("\"event\": \"instance\", \"application\": \"%.64s\"", info->applicationInfo.applicationName);
    return XR_SUCCESS;
}

API xrDestroySession(XrSession s);
API xrDestroyActionSet(XrActionSet set);

API xrDestroyInstance(XrInstance inst) {
    LOCKED;
    CHECK_INSTANCE(inst);
    if (g_session && g_session->inst == inst) xrDestroySession(g_session);
    while (inst->nsets) xrDestroyActionSet(inst->sets[inst->nsets - 1]);
    for (int p = 0; p < NPROFILES; p++) free(inst->suggested[p]);
    obj_free(inst);
    g_instance = NULL;
    g_ev_head = g_ev_count = 0, g_ev_lost = 0;
    paths_clear();
    log_line("\"event\": \"instance_destroyed\"");
    return XR_SUCCESS;
}

API xrGetInstanceProperties(XrInstance inst, XrInstanceProperties *props) {
    LOCKED;
    CHECK_INSTANCE(inst);
    CHECK_TYPE(props, XR_TYPE_INSTANCE_PROPERTIES);
    props->runtimeVersion = XR_MAKE_VERSION(0, 1, 0);
    snprintf(props->runtimeName, XR_MAX_RUNTIME_NAME_SIZE, "%s", RUNTIME_NAME);
    return XR_SUCCESS;
}

HOT_API xrPollEvent(XrInstance inst, XrEventDataBuffer *buf) {
    LOCKED;
    INJECT("xrPollEvent");
    CHECK_INSTANCE(inst);
    if (!buf) return XR_ERROR_VALIDATION_FAILURE;
    session_tick();
    if (g_ev_lost) {
        XrEventDataEventsLost lost = {XR_TYPE_EVENT_DATA_EVENTS_LOST, NULL, g_ev_lost};
        memset(buf, 0, sizeof *buf);
        memcpy(buf, &lost, sizeof lost);
        g_ev_lost = 0;
        return XR_SUCCESS;
    }
    if (!g_ev_count) return XR_EVENT_UNAVAILABLE;
    memcpy(buf, &g_events[g_ev_head], sizeof *buf);
    g_ev_head = (g_ev_head + 1) % MAX_EVENTS;
    g_ev_count--;
    return XR_SUCCESS;
}

API xrResultToString(XrInstance inst, XrResult value, char buffer[XR_MAX_RESULT_STRING_SIZE]) {
    LOCKED;
    CHECK_INSTANCE(inst);
    switch (value) {
#define RESULT_CASE(name, val) case name: snprintf(buffer, XR_MAX_RESULT_STRING_SIZE, "%s", #name); return XR_SUCCESS;
        XR_LIST_ENUM_XrResult(RESULT_CASE)
#undef RESULT_CASE
    default:
        snprintf(buffer, XR_MAX_RESULT_STRING_SIZE, "XR_UNKNOWN_%s_%d", value < 0 ? "FAILURE" : "SUCCESS", (int)value);
        return XR_SUCCESS;
    }
}

API xrStructureTypeToString(XrInstance inst, XrStructureType value, char buffer[XR_MAX_STRUCTURE_NAME_SIZE]) {
    LOCKED;
    CHECK_INSTANCE(inst);
    switch (value) {
#define STYPE_CASE(name, val) case name: snprintf(buffer, XR_MAX_STRUCTURE_NAME_SIZE, "%s", #name); return XR_SUCCESS;
        XR_LIST_ENUM_XrStructureType(STYPE_CASE)
#undef STYPE_CASE
    default:
        snprintf(buffer, XR_MAX_STRUCTURE_NAME_SIZE, "XR_UNKNOWN_STRUCTURE_TYPE_%d", (int)value);
        return XR_SUCCESS;
    }
}

/* ---- system ---- */

API xrGetSystem(XrInstance inst, const XrSystemGetInfo *info, XrSystemId *out) {
    LOCKED;
    CHECK_INSTANCE(inst);
    CHECK_TYPE(info, XR_TYPE_SYSTEM_GET_INFO);
    if (!out) return XR_ERROR_VALIDATION_FAILURE;
    if (info->formFactor == XR_FORM_FACTOR_HANDHELD_DISPLAY) return XR_ERROR_FORM_FACTOR_UNSUPPORTED;
    if (info->formFactor != XR_FORM_FACTOR_HEAD_MOUNTED_DISPLAY) return XR_ERROR_FORM_FACTOR_UNSUPPORTED;
    if (!g_hmd) return XR_ERROR_FORM_FACTOR_UNAVAILABLE;
    *out = SYSTEM_ID;
    return XR_SUCCESS;
}

API xrGetSystemProperties(XrInstance inst, XrSystemId sid, XrSystemProperties *p) {
    LOCKED;
    CHECK_INSTANCE(inst);
    if (sid != SYSTEM_ID) return XR_ERROR_SYSTEM_INVALID;
    CHECK_TYPE(p, XR_TYPE_SYSTEM_PROPERTIES);
    p->systemId = sid;
    p->vendorId = 0x4843; /* "HC" */
    snprintf(p->systemName, XR_MAX_SYSTEM_NAME_SIZE, "MockXR HMD");
    p->graphicsProperties.maxSwapchainImageWidth = 4096;
    p->graphicsProperties.maxSwapchainImageHeight = 4096;
    p->graphicsProperties.maxLayerCount = XR_MIN_COMPOSITION_LAYERS_SUPPORTED;
    p->trackingProperties.orientationTracking = XR_TRUE;
    p->trackingProperties.positionTracking = XR_TRUE;
    return XR_SUCCESS;
}

API xrEnumerateEnvironmentBlendModes(XrInstance inst, XrSystemId sid, XrViewConfigurationType vct,
                                     uint32_t capacity, uint32_t *countOut, XrEnvironmentBlendMode *modes) {
    LOCKED;
    CHECK_INSTANCE(inst);
    if (sid != SYSTEM_ID) return XR_ERROR_SYSTEM_INVALID;
    if (vct != XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO) return XR_ERROR_VIEW_CONFIGURATION_TYPE_UNSUPPORTED;
    TWO_CALL(capacity, countOut, 1, modes);
    modes[0] = XR_ENVIRONMENT_BLEND_MODE_OPAQUE;
    return XR_SUCCESS;
}

API xrEnumerateViewConfigurations(XrInstance inst, XrSystemId sid, uint32_t capacity, uint32_t *countOut,
                                  XrViewConfigurationType *types) {
    LOCKED;
    CHECK_INSTANCE(inst);
    if (sid != SYSTEM_ID) return XR_ERROR_SYSTEM_INVALID;
    TWO_CALL(capacity, countOut, 1, types);
    types[0] = XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO;
    return XR_SUCCESS;
}

API xrGetViewConfigurationProperties(XrInstance inst, XrSystemId sid, XrViewConfigurationType vct,
                                     XrViewConfigurationProperties *p) {
    LOCKED;
    CHECK_INSTANCE(inst);
    if (sid != SYSTEM_ID) return XR_ERROR_SYSTEM_INVALID;
    if (vct != XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO) return XR_ERROR_VIEW_CONFIGURATION_TYPE_UNSUPPORTED;
    CHECK_TYPE(p, XR_TYPE_VIEW_CONFIGURATION_PROPERTIES);
    p->viewConfigurationType = vct;
    p->fovMutable = XR_FALSE;
    return XR_SUCCESS;
}

API xrEnumerateViewConfigurationViews(XrInstance inst, XrSystemId sid, XrViewConfigurationType vct,
                                      uint32_t capacity, uint32_t *countOut, XrViewConfigurationView *views) {
    LOCKED;
    CHECK_INSTANCE(inst);
    if (sid != SYSTEM_ID) return XR_ERROR_SYSTEM_INVALID;
    if (vct != XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO) return XR_ERROR_VIEW_CONFIGURATION_TYPE_UNSUPPORTED;
    TWO_CALL(capacity, countOut, 2, views);
    for (int i = 0; i < 2; i++) {
        if (views[i].type != XR_TYPE_VIEW_CONFIGURATION_VIEW) return XR_ERROR_VALIDATION_FAILURE;
        views[i].recommendedImageRectWidth = VIEW_W, views[i].maxImageRectWidth = 4096;
        views[i].recommendedImageRectHeight = VIEW_H, views[i].maxImageRectHeight = 4096;
        views[i].recommendedSwapchainSampleCount = 1, views[i].maxSwapchainSampleCount = 1;
    }
    return XR_SUCCESS;
}

/* ---- extension functions ---- */

API xrGetOpenGLGraphicsRequirementsKHR(XrInstance inst, XrSystemId sid, XrGraphicsRequirementsOpenGLKHR *req) {
    LOCKED;
    CHECK_INSTANCE(inst);
    if (sid != SYSTEM_ID) return XR_ERROR_SYSTEM_INVALID;
    CHECK_TYPE(req, XR_TYPE_GRAPHICS_REQUIREMENTS_OPENGL_KHR);
    req->minApiVersionSupported = XR_MAKE_VERSION(3, 3, 0);
    req->maxApiVersionSupported = XR_MAKE_VERSION(4, 6, 0);
    inst->gl_requirements_queried = 1;
    return XR_SUCCESS;
}

HOT_API xrConvertTimespecTimeToTimeKHR(XrInstance inst, const struct timespec *ts, XrTime *out) {
    LOCKED;
    CHECK_INSTANCE(inst);
    if (!ts || !out) return XR_ERROR_VALIDATION_FAILURE;
    if (ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000L) return XR_ERROR_TIME_INVALID;
    XrTime t = (XrTime)ts->tv_sec * 1000000000LL + ts->tv_nsec;
    if (t <= 0) return XR_ERROR_TIME_INVALID;
    /* the same clock xrLocateSpace interpolates motion on: a virtual clock keeps the offset it
     * has to CLOCK_MONOTONIC now; the step clock answers each query with the next frame slot */
    if (g_clock == CLOCK_STEP) t = clock_query();
    else if (g_clock == CLOCK_FROZEN) t += g_virtual - now_ns();
    if (t <= 0) return XR_ERROR_TIME_INVALID;
    *out = t;
    return XR_SUCCESS;
}

/* XR_KHR_win32_convert_performance_counter_time on the mock's 1 GHz CLOCK_MONOTONIC counter: the
 * same clock, offsets and step-clock answers as the timespec conversion. */
API xrConvertWin32PerformanceCounterToTimeKHR(XrInstance inst, const int64_t *counter, XrTime *out) {
    LOCKED;
    CHECK_INSTANCE(inst);
    if (!counter || !out) return XR_ERROR_VALIDATION_FAILURE;
    XrTime t = *counter;
    if (t <= 0) return XR_ERROR_TIME_INVALID;
    if (g_clock == CLOCK_STEP) t = clock_query();
    else if (g_clock == CLOCK_FROZEN) t += g_virtual - now_ns();
    if (t <= 0) return XR_ERROR_TIME_INVALID;
    *out = t;
    return XR_SUCCESS;
}

API xrConvertTimeToWin32PerformanceCounterKHR(XrInstance inst, XrTime t, int64_t *counter) {
    LOCKED;
    CHECK_INSTANCE(inst);
    if (!counter) return XR_ERROR_VALIDATION_FAILURE;
    if (t <= 0) return XR_ERROR_TIME_INVALID;
    if (g_clock != CLOCK_REAL) t += now_ns() - g_virtual;
    if (t <= 0) return XR_ERROR_TIME_INVALID;
    *counter = t;
    return XR_SUCCESS;
}

API xrConvertTimeToTimespecTimeKHR(XrInstance inst, XrTime t, struct timespec *ts) {
    LOCKED;
    CHECK_INSTANCE(inst);
    if (!ts) return XR_ERROR_VALIDATION_FAILURE;
    if (t <= 0) return XR_ERROR_TIME_INVALID;
    if (g_clock != CLOCK_REAL) t += now_ns() - g_virtual;
    if (t <= 0) return XR_ERROR_TIME_INVALID;
    ts->tv_sec = t / 1000000000LL;
    ts->tv_nsec = t % 1000000000LL;
    return XR_SUCCESS;
}

/* ---- XR_FB_display_refresh_rate ---- */

/* The display moves to `rate` (one of REFRESH_RATES); a running session hears of it. */
static XrResult refresh_change(float rate) {
    int known = 0;
    for (size_t i = 0; i < NREFRESH; i++) known |= REFRESH_RATES[i] == rate;
    if (!known) return XR_ERROR_DISPLAY_REFRESH_RATE_UNSUPPORTED_FB;
    float from = g_refresh;
    g_refresh = rate;
    if (from != rate && g_session && g_instance && g_instance->ext_refresh) {
        XrEventDataDisplayRefreshRateChangedFB ev = {XR_TYPE_EVENT_DATA_DISPLAY_REFRESH_RATE_CHANGED_FB, NULL, from, rate};
        push_event(&ev, sizeof ev);
        log_line("\"event\": \"refresh_rate\", \"from\": %g, \"to\": %g", from, rate);
    }
    return XR_SUCCESS;
}

API xrEnumerateDisplayRefreshRatesFB(XrSession s, uint32_t capacity, uint32_t *countOut, float *rates) {
    LOCKED;
    CHECK_SESSION(s);
    TWO_CALL(capacity, countOut, (uint32_t)NREFRESH, rates);
    for (uint32_t i = 0; i < NREFRESH; i++) rates[i] = REFRESH_RATES[i];
    return XR_SUCCESS;
}

API xrGetDisplayRefreshRateFB(XrSession s, float *rate) {
    LOCKED;
    CHECK_SESSION(s);
    if (!rate) return XR_ERROR_VALIDATION_FAILURE;
    *rate = s->headless && rt_headless_rate_zero(g_rt) ? 0.0f : g_refresh;
    return XR_SUCCESS;
}

/* 0.0: no preference (the display's default, 90 Hz); otherwise one of the enumerated rates. */
API xrRequestDisplayRefreshRateFB(XrSession s, float rate) {
    LOCKED;
    CHECK_SESSION(s);
    if (rate == 0.0f) rate = (float)NOMINAL_RATE;
    XrResult r = refresh_change(rate);
    if (r == XR_SUCCESS) s->refresh_requested = 1;
    return r;
}

/* ---- session ---- */

static void resolve_profiles(XrSession s, int notify);

API xrCreateSession(XrInstance inst, const XrSessionCreateInfo *info, XrSession *out) {
    LOCKED;
    INJECT("xrCreateSession");
    CHECK_INSTANCE(inst);
    CHECK_TYPE(info, XR_TYPE_SESSION_CREATE_INFO);
    if (!out) return XR_ERROR_VALIDATION_FAILURE;
    if (info->systemId != SYSTEM_ID) return XR_ERROR_SYSTEM_INVALID;
    const MockGraphicsBindingOpenGLXlib *glx = NULL;
    for (const XrBaseInStructure *n = info->next; n; n = n->next)
        if (n->type == XR_TYPE_GRAPHICS_BINDING_OPENGL_XLIB_KHR) glx = (const void *)n;
    if (glx) {
        if (!inst->ext_gl) return XR_ERROR_GRAPHICS_DEVICE_INVALID;
        if (!inst->gl_requirements_queried) return XR_ERROR_GRAPHICS_REQUIREMENTS_CALL_MISSING;
        if (!glx->glxContext || !glx->xDisplay) return XR_ERROR_GRAPHICS_DEVICE_INVALID;
        if (gl_load() != 0) return XR_ERROR_GRAPHICS_DEVICE_INVALID;
    } else if (!inst->ext_headless) {
        return XR_ERROR_GRAPHICS_DEVICE_INVALID; /* no binding and no headless: what the spec names */
    }
    if (g_session) return XR_ERROR_LIMIT_REACHED;
    XrSession s = obj_new(OBJ_SESSION, sizeof *s);
    if (!s) return XR_ERROR_OUT_OF_MEMORY;
    s->inst = inst;
    s->headless = glx == NULL;
    s->glx_context = glx ? glx->glxContext : NULL;
    s->frame = -1;
    s->profile[0] = s->profile[1] = -1;
    s->refresh_requested = 0;
    g_session = s;
    *out = s;
    set_state(s, XR_SESSION_STATE_IDLE);
    set_state(s, XR_SESSION_STATE_READY);
    return XR_SUCCESS;
}

API xrDestroySwapchain(XrSwapchain sc);
API xrDestroySpace(XrSpace sp);

API xrDestroySession(XrSession s) {
    LOCKED;
    CHECK_SESSION(s);
    for (int i = 0; i < g_nobjects; i++) {
        void *o = g_objects[i].p;
        if (o && g_objects[i].kind == OBJ_SPACE && ((XrSpace)o)->session == s) xrDestroySpace(o);
        else if (o && g_objects[i].kind == OBJ_SWAPCHAIN && ((XrSwapchain)o)->session == s) xrDestroySwapchain(o);
    }
    /* drop queued events that name this session */
    int kept = 0;
    XrEventDataBuffer tmp[MAX_EVENTS];
    for (int i = 0; i < g_ev_count; i++) {
        XrEventDataBuffer *e = &g_events[(g_ev_head + i) % MAX_EVENTS];
        const XrEventDataSessionStateChanged *sc = (const void *)e;
        if ((e->type == XR_TYPE_EVENT_DATA_SESSION_STATE_CHANGED ||
             e->type == XR_TYPE_EVENT_DATA_INTERACTION_PROFILE_CHANGED) && sc->session == s)
            continue;
        tmp[kept++] = *e;
    }
    memcpy(g_events, tmp, sizeof(XrEventDataBuffer) * (size_t)kept);
    g_ev_head = 0, g_ev_count = kept;
    for (int i = 0; i < s->nattached; i++) s->attached[i]->attached = 0;
    sync_forget();
    obj_free(s);
    g_session = NULL;
    log_line("\"event\": \"session_destroyed\"");
    return XR_SUCCESS;
}

API xrBeginSession(XrSession s, const XrSessionBeginInfo *info) {
    LOCKED;
    INJECT("xrBeginSession");
    CHECK_SESSION(s);
    CHECK_TYPE(info, XR_TYPE_SESSION_BEGIN_INFO);
    if (s->lost) return XR_ERROR_SESSION_LOST;
    if (info->primaryViewConfigurationType != XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO)
        return XR_ERROR_VIEW_CONFIGURATION_TYPE_UNSUPPORTED;
    if (s->running) return XR_ERROR_SESSION_RUNNING;
    if (s->state != XR_SESSION_STATE_READY) return XR_ERROR_SESSION_NOT_READY;
    s->running = 1;
    s->frame = -1;
    s->waited = s->begun = 0;
    s->first_frame_ended = 0;
    s->epoch = runtime_now();
    s->slot = s->queries = 0;
    s->last_display = s->begun_display = 0;
    for (int i = 0; i < NSLOTS; i++) g_motion[i].next_cue = 0;
    /* A headless session has no frame loop to synchronise: it stays READY, as in Monado 21 (the
     * control API's "focus" command may still move it on). A GL session synchronises now and is
     * shown after its first xrEndFrame. */
    if (!s->headless) set_state(s, XR_SESSION_STATE_SYNCHRONIZED);
    else if (g_headless_focus || rt_headless_focuses(g_rt)) go_visible(s);
    return XR_SUCCESS;
}

API xrEndSession(XrSession s) {
    LOCKED;
    CHECK_SESSION(s);
    if (s->lost) return XR_SESSION_LOSS_PENDING;
    if (!s->running) return XR_ERROR_SESSION_NOT_RUNNING;
    if (s->state != XR_SESSION_STATE_STOPPING) return XR_ERROR_SESSION_NOT_STOPPING;
    s->running = 0;
    set_state(s, XR_SESSION_STATE_IDLE);
    if (s->exit_requested) set_state(s, XR_SESSION_STATE_EXITING);
    else set_state(s, XR_SESSION_STATE_READY);
    return XR_SUCCESS;
}

API xrRequestExitSession(XrSession s) {
    LOCKED;
    CHECK_SESSION(s);
    if (s->lost) return XR_SESSION_LOSS_PENDING;
    if (!s->running) return XR_ERROR_SESSION_NOT_RUNNING;
    go_stopping(s);
    return XR_SUCCESS;
}

/* ---- frame loop ---- */

HOT_API xrWaitFrame(XrSession s, const XrFrameWaitInfo *info, XrFrameState *fs) {
    XrTime wake = 0;
    {
        LOCKED;
        INJECT("xrWaitFrame");
        CHECK_SESSION(s);
        if (info && info->type != XR_TYPE_FRAME_WAIT_INFO) return XR_ERROR_VALIDATION_FAILURE;
        CHECK_TYPE(fs, XR_TYPE_FRAME_STATE);
        if (!s->running && !s->lost) return XR_ERROR_SESSION_NOT_RUNNING;
        if (s->headless) {
            /* strict: a headless session has no frames to wait for */
            if (g_rt == RT_STRICT) return XR_ERROR_VALIDATION_FAILURE;
            /* Monado: no compositor, nothing to wait for: returns at once, writes no frame state
             * and does not count as a wait (an xrBeginFrame after it is out of order) */
            return s->lost ? XR_SESSION_LOSS_PENDING : XR_SUCCESS;
        }
        if (g_clock == CLOCK_REAL && g_throttle) {
            XrTime now = now_ns();
            if (now > slot_time(s, s->slot) + FRAME_PERIOD_NS) /* fell behind: the slot now running */
                s->slot = (int64_t)((double)(now - s->epoch) * NOMINAL_RATE / 1e9);
            wake = slot_time(s, s->slot);
        }
    }
    if (wake) { /* sleep without the lock: control calls from other threads go on meanwhile */
        struct timespec ts = {(time_t)(wake / 1000000000LL), (long)(wake % 1000000000LL)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
    }
    LOCKED;
    CHECK_SESSION(s); /* destroyed by another thread while we slept */
    XrTime display;
    if (g_clock == CLOCK_STEP) display = clock_query(); /* the next slot, shown at once */
    else if (g_clock == CLOCK_FROZEN) display = g_virtual + FRAME_PERIOD_NS;
    else if (g_throttle) display = slot_time(s, ++s->slot);
    else display = now_ns() + FRAME_PERIOD_NS;
    if (display <= s->last_display) display = s->last_display + 1;
    s->last_display = display;
    s->frame++;
    g_frames_waited++;
    s->waited = 1;
    session_tick();
    fs->predictedDisplayTime = display;
    fs->predictedDisplayPeriod = FRAME_PERIOD_NS;
    fs->shouldRender = s->state == XR_SESSION_STATE_VISIBLE || s->state == XR_SESSION_STATE_FOCUSED;
    return s->lost ? XR_SESSION_LOSS_PENDING : XR_SUCCESS;
}

HOT_API xrBeginFrame(XrSession s, const XrFrameBeginInfo *info) {
    LOCKED;
    INJECT("xrBeginFrame");
    CHECK_SESSION(s);
    if (info && info->type != XR_TYPE_FRAME_BEGIN_INFO) return XR_ERROR_VALIDATION_FAILURE;
    if (!s->running && !s->lost) return XR_ERROR_SESSION_NOT_RUNNING;
    if (s->headless && g_rt == RT_STRICT) return XR_ERROR_VALIDATION_FAILURE;
    if (!s->waited) return XR_ERROR_CALL_ORDER_INVALID; /* Monado: "xrBeginFrame without xrWaitFrame" */
    s->waited = 0;
    s->begun_display = s->last_display;
    int discarded = s->begun;
    s->begun = 1;
    if (s->lost) return XR_SESSION_LOSS_PENDING;
    return discarded ? XR_FRAME_DISCARDED : XR_SUCCESS;
}

static XrResult check_layer(XrSession s, const XrCompositionLayerBaseHeader *l) {
    if (!l) return XR_ERROR_LAYER_INVALID;
    if (s->headless) return XR_ERROR_LAYER_INVALID;
    if (!obj_live(l->space, OBJ_SPACE)) return XR_ERROR_HANDLE_INVALID;
    if (l->type == XR_TYPE_COMPOSITION_LAYER_PROJECTION) {
        const XrCompositionLayerProjection *p = (const void *)l;
        if (p->viewCount != 2 || !p->views) return XR_ERROR_VALIDATION_FAILURE;
        for (int i = 0; i < 2; i++) {
            const XrSwapchainSubImage *si = &p->views[i].subImage;
            if (p->views[i].type != XR_TYPE_COMPOSITION_LAYER_PROJECTION_VIEW) return XR_ERROR_VALIDATION_FAILURE;
            if (!obj_live(si->swapchain, OBJ_SWAPCHAIN)) return XR_ERROR_HANDLE_INVALID;
            if (si->imageArrayIndex >= si->swapchain->layers) return XR_ERROR_VALIDATION_FAILURE;
            if (si->imageRect.offset.x < 0 || si->imageRect.offset.y < 0 ||
                (uint32_t)(si->imageRect.offset.x + si->imageRect.extent.width) > si->swapchain->width ||
                (uint32_t)(si->imageRect.offset.y + si->imageRect.extent.height) > si->swapchain->height)
                return XR_ERROR_SWAPCHAIN_RECT_INVALID;
        }
        return XR_SUCCESS;
    }
    if (l->type == XR_TYPE_COMPOSITION_LAYER_QUAD) {
        const XrCompositionLayerQuad *q = (const void *)l;
        return obj_live(q->subImage.swapchain, OBJ_SWAPCHAIN) ? XR_SUCCESS : XR_ERROR_HANDLE_INVALID;
    }
    return XR_ERROR_LAYER_INVALID;
}

/* Eye images of the next submitted projection layer, read back in the app's context. */
static struct {
    int pending;
    int64_t frame;
    int width[2], height[2];
    uint8_t *rgba[2]; /* rows bottom-up, as glReadPixels gives them */
} g_capture = {0, -1, {0, 0}, {0, 0}, {NULL, NULL}};

static void capture_clear(void) {
    for (int i = 0; i < 2; i++) free(g_capture.rgba[i]), g_capture.rgba[i] = NULL;
    g_capture.width[0] = g_capture.width[1] = g_capture.height[0] = g_capture.height[1] = 0;
    g_capture.frame = -1;
}

static void capture_layer(XrSession s, const XrCompositionLayerProjection *p) {
    if (!gl.loaded || !gl.GetCurrentContext()) return;
    int prev_fbo = 0, prev_pbo = 0, prev_align = 4;
    gl.GetIntegerv(GL_READ_FRAMEBUFFER_BINDING, &prev_fbo);
    gl.GetIntegerv(GL_PIXEL_PACK_BUFFER_BINDING, &prev_pbo);
    gl.GetIntegerv(GL_PACK_ALIGNMENT, &prev_align);
    uint32_t fbo;
    gl.GenFramebuffers(1, &fbo);
    gl.BindFramebuffer(GL_READ_FRAMEBUFFER, fbo);
    gl.BindBuffer(GL_PIXEL_PACK_BUFFER, 0);
    gl.PixelStorei(GL_PACK_ALIGNMENT, 1);
    capture_clear();
    for (int eye = 0; eye < 2; eye++) {
        const XrSwapchainSubImage *si = &p->views[eye].subImage;
        XrSwapchain sc = si->swapchain;
        if (sc->format != GL_RGBA8 && sc->format != GL_SRGB8_ALPHA8) continue;
        uint32_t tex = sc->tex[sc->released];
        if (sc->layers > 1)
            gl.FramebufferTextureLayer(GL_READ_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, tex, 0, (int)si->imageArrayIndex);
        else
            gl.FramebufferTexture2D(GL_READ_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, tex, 0);
        int w = si->imageRect.extent.width, h = si->imageRect.extent.height;
        g_capture.rgba[eye] = malloc((size_t)w * (size_t)h * 4);
        if (!g_capture.rgba[eye]) continue;
        gl.ReadPixels(si->imageRect.offset.x, si->imageRect.offset.y, w, h, GL_RGBA, GL_UNSIGNED_BYTE, g_capture.rgba[eye]);
        g_capture.width[eye] = w, g_capture.height[eye] = h;
    }
    gl.PixelStorei(GL_PACK_ALIGNMENT, prev_align);
    gl.BindBuffer(GL_PIXEL_PACK_BUFFER, (uint32_t)prev_pbo);
    gl.BindFramebuffer(GL_READ_FRAMEBUFFER, (uint32_t)prev_fbo);
    gl.DeleteFramebuffers(1, &fbo);
    g_capture.frame = s->frame;
    g_capture.pending = 0;
}

HOT_API xrEndFrame(XrSession s, const XrFrameEndInfo *info) {
    LOCKED;
    INJECT("xrEndFrame");
    CHECK_SESSION(s);
    CHECK_TYPE(info, XR_TYPE_FRAME_END_INFO);
    if (!s->running && !s->lost) return XR_ERROR_SESSION_NOT_RUNNING;
    if (s->headless && g_rt == RT_STRICT) return XR_ERROR_VALIDATION_FAILURE;
    if (!s->begun) return XR_ERROR_CALL_ORDER_INVALID;
    if (info->displayTime <= 0) return XR_ERROR_TIME_INVALID;
    /* strict: the frame is shown at the time its xrWaitFrame predicted, nothing else */
    if (g_rt == RT_STRICT && info->displayTime != s->begun_display) return XR_ERROR_TIME_INVALID;
    if (info->environmentBlendMode != XR_ENVIRONMENT_BLEND_MODE_OPAQUE)
        return XR_ERROR_ENVIRONMENT_BLEND_MODE_UNSUPPORTED;
    if (info->layerCount > XR_MIN_COMPOSITION_LAYERS_SUPPORTED) return XR_ERROR_LAYER_LIMIT_EXCEEDED;
    if (info->layerCount && !info->layers) return XR_ERROR_VALIDATION_FAILURE;
    for (uint32_t i = 0; i < info->layerCount; i++) {
        XrResult r = check_layer(s, info->layers[i]);
        if (r != XR_SUCCESS) return r;
    }
    s->begun = 0;
    g_frames_ended++;
    for (uint32_t i = 0; g_capture.pending && i < info->layerCount; i++)
        if (info->layers[i]->type == XR_TYPE_COMPOSITION_LAYER_PROJECTION)
            capture_layer(s, (const XrCompositionLayerProjection *)info->layers[i]);
    log_line("\"event\": \"end_frame\", \"frame\": %lld, \"layers\": %u", (long long)s->frame, info->layerCount);
    if (s->lost) return XR_SESSION_LOSS_PENDING;
    if (!s->first_frame_ended) {
        s->first_frame_ended = 1;
        if (!s->headless && s->state == XR_SESSION_STATE_SYNCHRONIZED) go_visible(s);
    }
    return XR_SUCCESS;
}

/* ---- spaces ---- */

static int ref_supported(XrInstance inst, XrReferenceSpaceType t) {
    return t == XR_REFERENCE_SPACE_TYPE_VIEW || t == XR_REFERENCE_SPACE_TYPE_LOCAL ||
           (t == XR_REFERENCE_SPACE_TYPE_STAGE && g_stage) ||
           (t == MOCK_REFERENCE_SPACE_TYPE_LOCAL_FLOOR && XR_VERSION_MINOR(inst->api) >= 1);
}

API xrEnumerateReferenceSpaces(XrSession s, uint32_t capacity, uint32_t *countOut, XrReferenceSpaceType *out) {
    LOCKED;
    CHECK_SESSION(s);
    XrReferenceSpaceType all[4] = {XR_REFERENCE_SPACE_TYPE_VIEW, XR_REFERENCE_SPACE_TYPE_LOCAL,
                                   XR_REFERENCE_SPACE_TYPE_STAGE, MOCK_REFERENCE_SPACE_TYPE_LOCAL_FLOOR};
    XrReferenceSpaceType have[4];
    uint32_t n = 0;
    for (int i = 0; i < 4; i++)
        if (ref_supported(s->inst, all[i])) have[n++] = all[i];
    TWO_CALL(capacity, countOut, n, out);
    memcpy(out, have, sizeof(XrReferenceSpaceType) * n);
    return XR_SUCCESS;
}

API xrCreateReferenceSpace(XrSession s, const XrReferenceSpaceCreateInfo *info, XrSpace *out) {
    LOCKED;
    CHECK_SESSION(s);
    CHECK_TYPE(info, XR_TYPE_REFERENCE_SPACE_CREATE_INFO);
    if (!out) return XR_ERROR_VALIDATION_FAILURE;
    if (!ref_supported(s->inst, info->referenceSpaceType)) return XR_ERROR_REFERENCE_SPACE_UNSUPPORTED;
    if (!quat_is_unit(&info->poseInReferenceSpace.orientation)) return XR_ERROR_POSE_INVALID;
    XrSpace sp = obj_new(OBJ_SPACE, sizeof *sp);
    if (!sp) return XR_ERROR_OUT_OF_MEMORY;
    sp->session = s;
    sp->ref = info->referenceSpaceType;
    sp->offset = info->poseInReferenceSpace;
    *out = sp;
    return XR_SUCCESS;
}

API xrGetReferenceSpaceBoundsRect(XrSession s, XrReferenceSpaceType t, XrExtent2Df *bounds) {
    LOCKED;
    CHECK_SESSION(s);
    if (!bounds) return XR_ERROR_VALIDATION_FAILURE;
    if (!ref_supported(s->inst, t)) return XR_ERROR_REFERENCE_SPACE_UNSUPPORTED;
    if (t == XR_REFERENCE_SPACE_TYPE_STAGE) {
        bounds->width = 2.0f, bounds->height = 2.0f;
        return XR_SUCCESS;
    }
    bounds->width = bounds->height = 0;
    return XR_SPACE_BOUNDS_UNAVAILABLE;
}

static HOT int sub_slot(XrPath sub) {
    if (sub == XR_NULL_PATH) return 0;
    return sub <= g_npaths ? g_path_slot[sub - 1] : -1; /* (slot_of, noted when interned) */
}

static HOT int action_has_sub(XrAction a, XrPath sub) {
    if (sub == XR_NULL_PATH) return 1;
    for (uint32_t i = 0; i < a->nsub; i++)
        if (a->sub[i] == sub) return 1;
    return 0;
}

static HOT int set_attached(XrSession s, XrActionSet set) {
    for (int i = 0; i < s->nattached; i++)
        if (s->attached[i] == set) return 1;
    return 0;
}

API xrCreateActionSpace(XrSession s, const XrActionSpaceCreateInfo *info, XrSpace *out) {
    LOCKED;
    CHECK_SESSION(s);
    CHECK_TYPE(info, XR_TYPE_ACTION_SPACE_CREATE_INFO);
    if (!out) return XR_ERROR_VALIDATION_FAILURE;
    if (!obj_live(info->action, OBJ_ACTION)) return XR_ERROR_HANDLE_INVALID;
    if (info->action->type != XR_ACTION_TYPE_POSE_INPUT) return XR_ERROR_ACTION_TYPE_MISMATCH;
    if (sub_slot(info->subactionPath) < 0 || !action_has_sub(info->action, info->subactionPath))
        return XR_ERROR_PATH_UNSUPPORTED;
    /* before xrAttachSessionActionSets too (legal): the space locates once its action is bound */
    if (!quat_is_unit(&info->poseInActionSpace.orientation)) return XR_ERROR_POSE_INVALID;
    XrSpace sp = obj_new(OBJ_SPACE, sizeof *sp);
    if (!sp) return XR_ERROR_OUT_OF_MEMORY;
    sp->session = s;
    sp->is_action = 1;
    sp->action = info->action;
    sp->sub = info->subactionPath;
    sp->offset = info->poseInActionSpace;
    *out = sp;
    return XR_SUCCESS;
}

API xrDestroySpace(XrSpace sp) {
    LOCKED;
    if (!obj_live(sp, OBJ_SPACE)) return XR_ERROR_HANDLE_INVALID;
    obj_free(sp);
    return XR_SUCCESS;
}

/* A space's pose in STAGE (the mock's world) and how well it is known. */
static HOT XrSpaceLocationFlags space_world(XrSpace sp, const Devices *d, XrPosef *out) {
    XrPosef origin = IDENTITY_POSE;
    XrSpaceLocationFlags flags = ALL_FLAGS;
    if (sp->is_action) {
        XrAction a = sp->action;
        int slot = sub_slot(sp->sub);
        const Source *src = NULL;
        for (int i = 0; a && i < a->nsrc && !src; i++)
            if (slot == 0 || a->src[i].hand + 1 == slot) src = &a->src[i];
        if (!src || slot < 0 || !a->st[slot].active) {
            *out = IDENTITY_POSE;
            return 0;
        }
        int pi = (src->hand == 0 ? P_LEFT_AIM : P_RIGHT_AIM) + (src->comp->src == SRC_GRIP);
        origin = d->pose[pi];
        flags = d->flags[1 + src->hand];
    } else if (sp->ref == XR_REFERENCE_SPACE_TYPE_VIEW) {
        origin = d->pose[P_HEAD];
        flags = d->flags[F_HEAD];
    } else if (sp->ref == XR_REFERENCE_SPACE_TYPE_LOCAL) {
        origin.position.y = LOCAL_HEIGHT;
    }
    *out = pose_compose(&origin, &sp->offset);
    return flags;
}

/* The devices at XrTime t: the motions at that time of the running session. A frame asks for one
 * time over and over (xrLocateSpace per space at its predicted display time, as a real runtime
 * samples its tracker once per display time and answers every locate from that sample): the
 * devices are computed once per time and kept while the time, the devices and the motions stay the
 * same (g_dev_gen). The pointer is valid until the next call. */
static HOT const Devices *devices_at(XrTime t) {
    static HOT_DATA struct {
        uint64_t gen;
        XrTime dt;
        Devices d;
    } memo;
    XrTime dt = session_dt(t);
    if (memo.gen != g_dev_gen || memo.dt != dt) {
        motions_at(dt, &memo.d);
        memo.gen = g_dev_gen, memo.dt = dt;
    }
    return &memo.d;
}

/* strict: poses are known from 1 s before the runtime clock to 0.5 s after it; outside that the
 * runtime cannot locate (the spec lets it clear the valid bits), as a real tracker's history and
 * prediction horizon end somewhere. */
#define STRICT_HISTORY_NS 1000000000LL
#define STRICT_PREDICTION_NS 500000000LL
static HOT int time_locatable(XrTime t) {
    if (g_rt != RT_STRICT) return 1;
    XrTime now = runtime_now();
    return t >= now - STRICT_HISTORY_NS && t <= now + STRICT_PREDICTION_NS;
}

static HOT XrSpaceLocationFlags locate(XrSpace sp, XrSpace base, const Devices *d, int known, XrPosef *out) {
    XrPosef ws, wb;
    XrSpaceLocationFlags fs = space_world(sp, d, &ws), fb = space_world(base, d, &wb);
    if (!known) fs = 0;
    XrSpaceLocationFlags f = fs & fb;
    XrPosef inv = pose_inverse(&wb);
    *out = pose_compose(&inv, &ws);
    if (!(f & XR_SPACE_LOCATION_ORIENTATION_VALID_BIT)) out->orientation = IDENTITY_POSE.orientation;
    if (!(f & XR_SPACE_LOCATION_POSITION_VALID_BIT)) out->position = IDENTITY_POSE.position;
    return f;
}

HOT_API xrLocateSpace(XrSpace sp, XrSpace base, XrTime t, XrSpaceLocation *loc) {
    LOCKED;
    INJECT("xrLocateSpace");
    if (!obj_live(sp, OBJ_SPACE) || !obj_live(base, OBJ_SPACE)) return XR_ERROR_HANDLE_INVALID;
    CHECK_TYPE(loc, XR_TYPE_SPACE_LOCATION);
    if (t <= 0) return XR_ERROR_TIME_INVALID;
    session_tick();
    const Devices *d = devices_at(t);
    loc->locationFlags = locate(sp, base, d, time_locatable(t), &loc->pose);
    for (XrBaseOutStructure *n = loc->next; n; n = n->next)
        if (n->type == XR_TYPE_SPACE_VELOCITY) {
            XrSpaceVelocity *v = (XrSpaceVelocity *)n;
            v->velocityFlags = 0;
            memset(&v->linearVelocity, 0, sizeof v->linearVelocity);
            memset(&v->angularVelocity, 0, sizeof v->angularVelocity);
        }
    return sp->session->lost ? XR_SESSION_LOSS_PENDING : XR_SUCCESS;
}

API xrLocateSpaces(XrSession s, const MockSpacesLocateInfo *info, MockSpaceLocations *locs) {
    LOCKED;
    CHECK_SESSION(s);
    CHECK_TYPE(info, MOCK_TYPE_SPACES_LOCATE_INFO);
    CHECK_TYPE(locs, MOCK_TYPE_SPACE_LOCATIONS);
    if (!obj_live(info->baseSpace, OBJ_SPACE)) return XR_ERROR_HANDLE_INVALID;
    if (info->time <= 0) return XR_ERROR_TIME_INVALID;
    if (info->spaceCount == 0 || !info->spaces || locs->locationCount != info->spaceCount || !locs->locations)
        return XR_ERROR_VALIDATION_FAILURE;
    for (uint32_t i = 0; i < info->spaceCount; i++)
        if (!obj_live(info->spaces[i], OBJ_SPACE)) return XR_ERROR_HANDLE_INVALID;
    session_tick();
    const Devices *d = devices_at(info->time);
    int known = time_locatable(info->time);
    for (uint32_t i = 0; i < info->spaceCount; i++)
        locs->locations[i].locationFlags = locate(info->spaces[i], info->baseSpace, d, known, &locs->locations[i].pose);
    return s->lost ? XR_SESSION_LOSS_PENDING : XR_SUCCESS;
}

API xrLocateViews(XrSession s, const XrViewLocateInfo *info, XrViewState *vs, uint32_t capacity,
                  uint32_t *countOut, XrView *views) {
    LOCKED;
    CHECK_SESSION(s);
    CHECK_TYPE(info, XR_TYPE_VIEW_LOCATE_INFO);
    CHECK_TYPE(vs, XR_TYPE_VIEW_STATE);
    if (info->viewConfigurationType != XR_VIEW_CONFIGURATION_TYPE_PRIMARY_STEREO)
        return XR_ERROR_VIEW_CONFIGURATION_TYPE_UNSUPPORTED;
    if (!obj_live(info->space, OBJ_SPACE)) return XR_ERROR_HANDLE_INVALID;
    if (info->displayTime <= 0) return XR_ERROR_TIME_INVALID;
    TWO_CALL(capacity, countOut, 2, views);
    session_tick();
    const Devices *d = devices_at(info->displayTime);
    XrPosef head = d->pose[P_HEAD], wb, inv;
    XrSpaceLocationFlags f = d->flags[F_HEAD] & space_world(info->space, d, &wb);
    if (!time_locatable(info->displayTime)) f = 0;
    inv = pose_inverse(&wb);
    vs->viewStateFlags = f;
    for (int i = 0; i < 2; i++) {
        if (views[i].type != XR_TYPE_VIEW) return XR_ERROR_VALIDATION_FAILURE;
        XrPosef eye = IDENTITY_POSE, we;
        eye.position.x = i == 0 ? -IPD / 2 : IPD / 2;
        we = pose_compose(&head, &eye);
        views[i].pose = pose_compose(&inv, &we);
        views[i].fov.angleLeft = i == 0 ? -0.8727f : -0.7854f; /* 50° outward, 45° inward */
        views[i].fov.angleRight = i == 0 ? 0.7854f : 0.8727f;
        views[i].fov.angleUp = 0.7854f, views[i].fov.angleDown = -0.8727f;
    }
    return s->lost ? XR_SESSION_LOSS_PENDING : XR_SUCCESS;
}

/* ---- swapchains ---- */

API xrEnumerateSwapchainFormats(XrSession s, uint32_t capacity, uint32_t *countOut, int64_t *formats) {
    LOCKED;
    CHECK_SESSION(s);
    uint32_t n = s->headless ? 0 : (uint32_t)NGL_FORMATS;
    TWO_CALL(capacity, countOut, n, formats);
    memcpy(formats, GL_FORMATS, sizeof(int64_t) * n);
    return XR_SUCCESS;
}

static int gl_upload_format(int64_t fmt, uint32_t *format, uint32_t *type) {
    switch (fmt) {
    case GL_SRGB8_ALPHA8:
    case GL_RGBA8: *format = GL_RGBA, *type = GL_UNSIGNED_BYTE; return 0;
    case GL_DEPTH_COMPONENT24: *format = GL_DEPTH_COMPONENT, *type = GL_UNSIGNED_INT; return 0;
    case GL_DEPTH_COMPONENT32F: *format = GL_DEPTH_COMPONENT, *type = GL_FLOAT; return 0;
    case GL_DEPTH24_STENCIL8: *format = GL_DEPTH_STENCIL, *type = GL_UNSIGNED_INT_24_8; return 0;
    default: return -1;
    }
}

API xrCreateSwapchain(XrSession s, const XrSwapchainCreateInfo *info, XrSwapchain *out) {
    LOCKED;
    CHECK_SESSION(s);
    CHECK_TYPE(info, XR_TYPE_SWAPCHAIN_CREATE_INFO);
    if (!out) return XR_ERROR_VALIDATION_FAILURE;
    if (s->headless) return XR_ERROR_FEATURE_UNSUPPORTED;
    if (s->lost) return XR_ERROR_SESSION_LOST;
    uint32_t format, type;
    if (gl_upload_format(info->format, &format, &type)) return XR_ERROR_SWAPCHAIN_FORMAT_UNSUPPORTED;
    if (info->sampleCount != 1 || info->faceCount != 1 || info->mipCount != 1 || info->arraySize < 1 ||
        info->width < 1 || info->height < 1 || info->width > 4096 || info->height > 4096 || info->arraySize > 16)
        return XR_ERROR_FEATURE_UNSUPPORTED;
    if (!gl.GetCurrentContext()) return XR_ERROR_RUNTIME_FAILURE; /* the app's context must be current */
    XrSwapchain sc = obj_new(OBJ_SWAPCHAIN, sizeof *sc);
    if (!sc) return XR_ERROR_OUT_OF_MEMORY;
    sc->session = s;
    sc->format = info->format;
    sc->width = info->width, sc->height = info->height, sc->layers = info->arraySize;
    uint32_t target = sc->layers > 1 ? GL_TEXTURE_2D_ARRAY : GL_TEXTURE_2D;
    int prev = 0;
    gl.GetIntegerv(sc->layers > 1 ? GL_TEXTURE_BINDING_2D_ARRAY : GL_TEXTURE_BINDING_2D, &prev);
    gl.GenTextures(MAX_IMAGES, sc->tex);
    for (int i = 0; i < MAX_IMAGES; i++) {
        gl.BindTexture(target, sc->tex[i]);
        gl.TexParameteri(target, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
        gl.TexParameteri(target, GL_TEXTURE_MAG_FILTER, GL_LINEAR);
        if (sc->layers > 1)
            gl.TexImage3D(target, 0, (int)info->format, (int)sc->width, (int)sc->height, (int)sc->layers, 0, format, type, NULL);
        else
            gl.TexImage2D(target, 0, (int)info->format, (int)sc->width, (int)sc->height, 0, format, type, NULL);
    }
    gl.BindTexture(target, (uint32_t)prev);
    *out = sc;
    return XR_SUCCESS;
}

API xrDestroySwapchain(XrSwapchain sc) {
    LOCKED;
    if (!obj_live(sc, OBJ_SWAPCHAIN)) return XR_ERROR_HANDLE_INVALID;
    /* textures belong to the app's context: delete them only while a context is current */
    if (gl.loaded && gl.GetCurrentContext()) gl.DeleteTextures(MAX_IMAGES, sc->tex);
    obj_free(sc);
    return XR_SUCCESS;
}

API xrEnumerateSwapchainImages(XrSwapchain sc, uint32_t capacity, uint32_t *countOut, XrSwapchainImageBaseHeader *images) {
    LOCKED;
    if (!obj_live(sc, OBJ_SWAPCHAIN)) return XR_ERROR_HANDLE_INVALID;
    TWO_CALL(capacity, countOut, MAX_IMAGES, images);
    XrSwapchainImageOpenGLKHR *gli = (XrSwapchainImageOpenGLKHR *)images;
    for (int i = 0; i < MAX_IMAGES; i++) {
        if (gli[i].type != XR_TYPE_SWAPCHAIN_IMAGE_OPENGL_KHR) return XR_ERROR_VALIDATION_FAILURE;
        gli[i].image = sc->tex[i];
    }
    return XR_SUCCESS;
}

API xrAcquireSwapchainImage(XrSwapchain sc, const XrSwapchainImageAcquireInfo *info, uint32_t *index) {
    LOCKED;
    if (!obj_live(sc, OBJ_SWAPCHAIN)) return XR_ERROR_HANDLE_INVALID;
    if (info && info->type != XR_TYPE_SWAPCHAIN_IMAGE_ACQUIRE_INFO) return XR_ERROR_VALIDATION_FAILURE;
    if (!index) return XR_ERROR_VALIDATION_FAILURE;
    if (sc->nqueued == MAX_IMAGES) return XR_ERROR_CALL_ORDER_INVALID;
    sc->queue[sc->nqueued++] = (uint32_t)sc->next;
    *index = (uint32_t)sc->next;
    sc->next = (sc->next + 1) % MAX_IMAGES;
    return XR_SUCCESS;
}

API xrWaitSwapchainImage(XrSwapchain sc, const XrSwapchainImageWaitInfo *info) {
    LOCKED;
    if (!obj_live(sc, OBJ_SWAPCHAIN)) return XR_ERROR_HANDLE_INVALID;
    CHECK_TYPE(info, XR_TYPE_SWAPCHAIN_IMAGE_WAIT_INFO);
    if (sc->waited || sc->nqueued == 0) return XR_ERROR_CALL_ORDER_INVALID;
    sc->waited = 1;
    return XR_SUCCESS;
}

API xrReleaseSwapchainImage(XrSwapchain sc, const XrSwapchainImageReleaseInfo *info) {
    LOCKED;
    if (!obj_live(sc, OBJ_SWAPCHAIN)) return XR_ERROR_HANDLE_INVALID;
    if (info && info->type != XR_TYPE_SWAPCHAIN_IMAGE_RELEASE_INFO) return XR_ERROR_VALIDATION_FAILURE;
    if (!sc->waited) return XR_ERROR_CALL_ORDER_INVALID;
    sc->waited = 0;
    sc->released = (int)sc->queue[0];
    memmove(sc->queue, sc->queue + 1, sizeof(uint32_t) * (size_t)(--sc->nqueued));
    return XR_SUCCESS;
}

/* ---- paths API ---- */

API xrStringToPath(XrInstance inst, const char *s, XrPath *out) {
    LOCKED;
    CHECK_INSTANCE(inst);
    if (!s || !out) return XR_ERROR_VALIDATION_FAILURE;
    if (!path_well_formed(s)) return XR_ERROR_PATH_FORMAT_INVALID;
    XrPath p = path_intern(s);
    if (p == XR_NULL_PATH) return XR_ERROR_PATH_COUNT_EXCEEDED;
    *out = p;
    return XR_SUCCESS;
}

API xrPathToString(XrInstance inst, XrPath p, uint32_t capacity, uint32_t *countOut, char *buffer) {
    LOCKED;
    CHECK_INSTANCE(inst);
    const char *s = path_str(p);
    if (!s) return XR_ERROR_PATH_INVALID;
    return copy_string(s, capacity, countOut, buffer);
}

/* ---- actions ---- */

static int name_well_formed(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) || *s == '-' || *s == '_' || *s == '.'))
            return 0;
    return 1;
}

API xrCreateActionSet(XrInstance inst, const XrActionSetCreateInfo *info, XrActionSet *out) {
    LOCKED;
    CHECK_INSTANCE(inst);
    CHECK_TYPE(info, XR_TYPE_ACTION_SET_CREATE_INFO);
    if (!out) return XR_ERROR_VALIDATION_FAILURE;
    if (!info->actionSetName[0] || !memchr(info->actionSetName, 0, XR_MAX_ACTION_SET_NAME_SIZE)) return XR_ERROR_NAME_INVALID;
    if (!name_well_formed(info->actionSetName)) return XR_ERROR_PATH_FORMAT_INVALID;
    if (!info->localizedActionSetName[0]) return XR_ERROR_LOCALIZED_NAME_INVALID;
    for (int i = 0; i < inst->nsets; i++) {
        if (strcmp(inst->sets[i]->name, info->actionSetName) == 0) return XR_ERROR_NAME_DUPLICATED;
        if (strcmp(inst->sets[i]->lname, info->localizedActionSetName) == 0) return XR_ERROR_LOCALIZED_NAME_DUPLICATED;
    }
    if (inst->nsets == MAX_SETS) return XR_ERROR_LIMIT_REACHED;
    XrActionSet set = obj_new(OBJ_ACTION_SET, sizeof *set);
    if (!set) return XR_ERROR_OUT_OF_MEMORY;
    set->inst = inst;
    snprintf(set->name, sizeof set->name, "%s", info->actionSetName);
    snprintf(set->lname, sizeof set->lname, "%s", info->localizedActionSetName);
    set->priority = info->priority;
    inst->sets[inst->nsets++] = set;
    *out = set;
    return XR_SUCCESS;
}

API xrDestroyAction(XrAction a);

API xrDestroyActionSet(XrActionSet set) {
    LOCKED;
    if (!obj_live(set, OBJ_ACTION_SET)) return XR_ERROR_HANDLE_INVALID;
    sync_forget();
    while (set->nactions) xrDestroyAction(set->actions[set->nactions - 1]);
    XrInstance inst = set->inst;
    for (int i = 0; i < inst->nsets; i++)
        if (inst->sets[i] == set) inst->sets[i] = inst->sets[--inst->nsets];
    for (int i = 0; g_session && i < g_session->nattached; i++) /* the session stops using it */
        if (g_session->attached[i] == set) g_session->attached[i] = g_session->attached[--g_session->nattached];
    obj_free(set);
    return XR_SUCCESS;
}

API xrCreateAction(XrActionSet set, const XrActionCreateInfo *info, XrAction *out) {
    LOCKED;
    if (!obj_live(set, OBJ_ACTION_SET)) return XR_ERROR_HANDLE_INVALID;
    CHECK_TYPE(info, XR_TYPE_ACTION_CREATE_INFO);
    if (!out) return XR_ERROR_VALIDATION_FAILURE;
    if (set->attached) return XR_ERROR_ACTIONSETS_ALREADY_ATTACHED;
    if (!info->actionName[0]) return XR_ERROR_NAME_INVALID;
    if (!name_well_formed(info->actionName)) return XR_ERROR_PATH_FORMAT_INVALID;
    if (!info->localizedActionName[0]) return XR_ERROR_LOCALIZED_NAME_INVALID;
    switch (info->actionType) {
    case XR_ACTION_TYPE_BOOLEAN_INPUT: case XR_ACTION_TYPE_FLOAT_INPUT: case XR_ACTION_TYPE_VECTOR2F_INPUT:
    case XR_ACTION_TYPE_POSE_INPUT: case XR_ACTION_TYPE_VIBRATION_OUTPUT: break;
    default: return XR_ERROR_VALIDATION_FAILURE;
    }
    for (int i = 0; i < set->nactions; i++) {
        if (strcmp(set->actions[i]->name, info->actionName) == 0) return XR_ERROR_NAME_DUPLICATED;
        if (strcmp(set->actions[i]->lname, info->localizedActionName) == 0) return XR_ERROR_LOCALIZED_NAME_DUPLICATED;
    }
    if (info->countSubactionPaths > MAX_SUB || (info->countSubactionPaths && !info->subactionPaths))
        return XR_ERROR_PATH_UNSUPPORTED;
    for (uint32_t i = 0; i < info->countSubactionPaths; i++) {
        if (!path_str(info->subactionPaths[i])) return XR_ERROR_PATH_INVALID;
        if (sub_slot(info->subactionPaths[i]) <= 0) return XR_ERROR_PATH_UNSUPPORTED;
        for (uint32_t j = 0; j < i; j++)
            if (info->subactionPaths[j] == info->subactionPaths[i]) return XR_ERROR_PATH_UNSUPPORTED;
    }
    if (set->nactions == MAX_ACTIONS) return XR_ERROR_LIMIT_REACHED;
    XrAction a = obj_new(OBJ_ACTION, sizeof *a);
    if (!a) return XR_ERROR_OUT_OF_MEMORY;
    a->set = set;
    snprintf(a->name, sizeof a->name, "%s", info->actionName);
    snprintf(a->lname, sizeof a->lname, "%s", info->localizedActionName);
    a->type = info->actionType;
    a->nsub = info->countSubactionPaths;
    memcpy(a->sub, info->subactionPaths, sizeof(XrPath) * a->nsub);
    set->actions[set->nactions++] = a;
    *out = a;
    return XR_SUCCESS;
}

API xrDestroyAction(XrAction a) {
    LOCKED;
    if (!obj_live(a, OBJ_ACTION)) return XR_ERROR_HANDLE_INVALID;
    sync_forget();
    XrActionSet set = a->set;
    for (int i = 0; i < set->nactions; i++)
        if (set->actions[i] == a) set->actions[i] = set->actions[--set->nactions];
    XrInstance inst = set->inst;
    for (int p = 0; p < NPROFILES; p++) /* forget suggestions naming it */
        for (uint32_t i = 0; i < inst->nsuggested[p];)
            if (inst->suggested[p][i].action == a) inst->suggested[p][i] = inst->suggested[p][--inst->nsuggested[p]];
            else i++;
    for (int i = 0; i < g_nobjects; i++) /* its action spaces stay valid handles but locate nothing */
        if (g_objects[i].p && g_objects[i].kind == OBJ_SPACE && ((XrSpace)g_objects[i].p)->action == a)
            ((XrSpace)g_objects[i].p)->action = NULL;
    obj_free(a);
    return XR_SUCCESS;
}

API xrSuggestInteractionProfileBindings(XrInstance inst, const XrInteractionProfileSuggestedBinding *sb) {
    LOCKED;
    CHECK_INSTANCE(inst);
    CHECK_TYPE(sb, XR_TYPE_INTERACTION_PROFILE_SUGGESTED_BINDING);
    if (sb->countSuggestedBindings == 0 || !sb->suggestedBindings) return XR_ERROR_VALIDATION_FAILURE;
    const char *ps = path_str(sb->interactionProfile);
    if (!ps) return XR_ERROR_PATH_INVALID;
    int pi = profile_index(ps);
    if (pi < 0) return XR_ERROR_PATH_UNSUPPORTED;
    for (uint32_t i = 0; i < sb->countSuggestedBindings; i++) {
        const XrActionSuggestedBinding *b = &sb->suggestedBindings[i];
        if (!obj_live(b->action, OBJ_ACTION) || b->action->set->inst != inst) return XR_ERROR_HANDLE_INVALID;
        if (b->action->set->attached) return XR_ERROR_ACTIONSETS_ALREADY_ATTACHED;
        const char *bs = path_str(b->binding), *rest;
        if (!bs) return XR_ERROR_PATH_INVALID;
        int hand = hand_prefix(bs, &rest);
        if (hand < 0 || !comp_find(PROFILES[pi].comps, hand, rest, 0, XR_VERSION_MINOR(inst->api) >= 1))
            return XR_ERROR_PATH_UNSUPPORTED;
    }
    Binding *list = malloc(sizeof(Binding) * sb->countSuggestedBindings);
    if (!list) return XR_ERROR_RUNTIME_FAILURE; /* xr.xml allows this function no OUT_OF_MEMORY */
    for (uint32_t i = 0; i < sb->countSuggestedBindings; i++) {
        list[i].action = sb->suggestedBindings[i].action;
        list[i].path = sb->suggestedBindings[i].binding;
    }
    free(inst->suggested[pi]); /* a later call for the same profile replaces the earlier one */
    inst->suggested[pi] = list;
    inst->nsuggested[pi] = sb->countSuggestedBindings;
    return XR_SUCCESS;
}

/*
 * The profile each hand runs: the emulated controller's when the app suggested bindings for it,
 * else khr/simple_controller when suggested (every controller can act as one), else none.
 * Re-resolves every attached action's bound sources.
 */
static void resolve_profiles(XrSession s, int notify) {
    sync_forget();
    XrInstance inst = s->inst;
    int p = inst->nsuggested[g_emulated] ? g_emulated : inst->nsuggested[PR_SIMPLE] ? PR_SIMPLE : -1;
    int changed = s->profile[0] != p || s->profile[1] != p;
    s->profile[0] = s->profile[1] = p;
    for (int k = 0; k < s->nattached; k++) {
        XrActionSet set = s->attached[k];
        for (int j = 0; j < set->nactions; j++) {
            XrAction a = set->actions[j];
            a->nsrc = 0;
            memset(a->st, 0, sizeof a->st);
            if (p < 0) continue;
            for (uint32_t i = 0; i < inst->nsuggested[p] && a->nsrc < MAX_SOURCES; i++) {
                const Binding *b = &inst->suggested[p][i];
                if (b->action != a) continue;
                const char *rest = "";
                int hand = hand_prefix(path_str(b->path), &rest);
                if (hand < 0) continue;
                XrPath hp = path_lookup(HAND_PATHS[hand]);
                if (a->nsub && (hp == XR_NULL_PATH || !action_has_sub(a, hp))) continue;
                const Comp *c = comp_find(PROFILES[p].comps, hand, rest, a->type, XR_VERSION_MINOR(inst->api) >= 1);
                if (!c) continue; /* the path exists but does not fit the action type */
                a->src[a->nsrc++] = (Source){hand, c, b->path};
            }
        }
    }
    if (notify && changed) {
        XrEventDataInteractionProfileChanged ev = {XR_TYPE_EVENT_DATA_INTERACTION_PROFILE_CHANGED, NULL, s};
        push_event(&ev, sizeof ev);
        log_line("\"event\": \"interaction_profile\", \"profile\": \"%s\"", p >= 0 ? PROFILES[p].path : "");
    }
}

API xrAttachSessionActionSets(XrSession s, const XrSessionActionSetsAttachInfo *info) {
    LOCKED;
    CHECK_SESSION(s);
    CHECK_TYPE(info, XR_TYPE_SESSION_ACTION_SETS_ATTACH_INFO);
    if (s->nattached) return XR_ERROR_ACTIONSETS_ALREADY_ATTACHED;
    if (info->countActionSets == 0 || !info->actionSets || info->countActionSets > MAX_SETS)
        return XR_ERROR_VALIDATION_FAILURE;
    for (uint32_t i = 0; i < info->countActionSets; i++)
        if (!obj_live(info->actionSets[i], OBJ_ACTION_SET)) return XR_ERROR_HANDLE_INVALID;
    for (uint32_t i = 0; i < info->countActionSets; i++) {
        s->attached[s->nattached++] = info->actionSets[i];
        info->actionSets[i]->attached = 1;
    }
    resolve_profiles(s, 1);
    return XR_SUCCESS;
}

API xrGetCurrentInteractionProfile(XrSession s, XrPath top, XrInteractionProfileState *st) {
    LOCKED;
    CHECK_SESSION(s);
    CHECK_TYPE(st, XR_TYPE_INTERACTION_PROFILE_STATE);
    int slot = sub_slot(top);
    if (top == XR_NULL_PATH || slot < 0) return XR_ERROR_PATH_UNSUPPORTED;
    if (!s->nattached) return XR_ERROR_ACTIONSET_NOT_ATTACHED;
    int p = slot == 1 || slot == 2 ? s->profile[slot - 1] : -1;
    st->interactionProfile = p >= 0 ? path_intern(PROFILES[p].path) : XR_NULL_PATH;
    return XR_SUCCESS;
}

/* One action's states from the inputs; returns 1 unless it left them all as they were, none changed. */
static HOT int sync_action(XrAction a, const Devices *d, XrTime t, int active_set) {
    ActState next[NSLOT];
    memset(next, 0, sizeof next);
    for (int i = 0; active_set && i < a->nsrc; i++) {
        const Source *src = &a->src[i];
        float v[2];
        comp_read(d, src->comp, src->hand, v);
        if (a->type == XR_ACTION_TYPE_BOOLEAN_INPUT)
            v[0] = src->comp->kind == K_FLOAT ? (v[0] >= 0.5f ? 1.0f : 0.0f) : (v[0] != 0 ? 1.0f : 0.0f);
        int slots[2] = {0, src->hand + 1};
        for (int k = 0; k < 2; k++) {
            ActState *n = &next[slots[k]];
            /* several sources: booleans OR, analog inputs keep the largest magnitude */
            if (!n->active || fabsf(v[0]) + fabsf(v[1]) > fabsf(n->v[0]) + fabsf(n->v[1]))
                n->v[0] = v[0], n->v[1] = v[1];
            n->active = 1;
        }
    }
    int changed = 0;
    for (int k = 0; k < NSLOT; k++) {
        ActState *o = &a->st[k], *n = &next[k];
        int is_input = a->type != XR_ACTION_TYPE_POSE_INPUT && a->type != XR_ACTION_TYPE_VIBRATION_OUTPUT;
        n->changed = is_input && o->active && n->active && (o->v[0] != n->v[0] || o->v[1] != n->v[1]);
        n->last = n->changed ? t : (n->active ? o->last : 0);
        if (n->active && !o->active) n->last = t;
        changed |= n->changed || memcmp(o, n, sizeof *n) != 0;
        *o = *n;
    }
    return changed;
}

HOT_API xrSyncActions(XrSession s, const XrActionsSyncInfo *info) {
    LOCKED;
    INJECT("xrSyncActions");
    CHECK_SESSION(s);
    CHECK_TYPE(info, XR_TYPE_ACTIONS_SYNC_INFO);
    if (s->lost) return XR_SESSION_LOSS_PENDING;
    if (info->countActiveActionSets && !info->activeActionSets) return XR_ERROR_VALIDATION_FAILURE;
    for (uint32_t i = 0; i < info->countActiveActionSets; i++) {
        XrActionSet set = info->activeActionSets[i].actionSet;
        if (!obj_live(set, OBJ_ACTION_SET)) return XR_ERROR_HANDLE_INVALID;
        if (!set_attached(s, set)) return XR_ERROR_ACTIONSET_NOT_ATTACHED;
        XrPath sub = info->activeActionSets[i].subactionPath;
        if (sub != XR_NULL_PATH && sub_slot(sub) <= 0) return XR_ERROR_PATH_UNSUPPORTED;
    }
    session_tick();
    int focused = s->state == XR_SESSION_STATE_FOCUSED;
    /* inputs as they are now by the runtime clock, as a real runtime samples its controllers */
    XrTime t = runtime_now();
    const Devices *d = inputs_at(session_dt(t));
    uint64_t active = 0;
    for (int k = 0; focused && k < s->nattached; k++)
        for (uint32_t i = 0; i < info->countActiveActionSets; i++)
            if (info->activeActionSets[i].actionSet == s->attached[k]) active |= 1ULL << k;
    if (!sync_unchanged(s, active, d)) {
        int changed = 0;
        for (int k = 0; k < s->nattached; k++) {
            XrActionSet set = s->attached[k];
            for (int j = 0; j < set->nactions; j++) changed |= sync_action(set->actions[j], d, t, (active >> k) & 1);
        }
        if (changed) sync_forget();
        else sync_note(s, active, d);
    }
    return focused ? XR_SUCCESS : XR_SESSION_NOT_FOCUSED;
}

static HOT XrResult action_state_slot(XrSession s, const XrActionStateGetInfo *info, XrActionType type, int *slot) {
    CHECK_SESSION(s);
    CHECK_TYPE(info, XR_TYPE_ACTION_STATE_GET_INFO);
    if (!obj_live(info->action, OBJ_ACTION)) return XR_ERROR_HANDLE_INVALID;
    if (info->action->type != type) return XR_ERROR_ACTION_TYPE_MISMATCH;
    if (!set_attached(s, info->action->set)) return XR_ERROR_ACTIONSET_NOT_ATTACHED;
    *slot = sub_slot(info->subactionPath);
    if (*slot < 0 || !action_has_sub(info->action, info->subactionPath)) return XR_ERROR_PATH_UNSUPPORTED;
    return XR_SUCCESS;
}

HOT_API xrGetActionStateBoolean(XrSession s, const XrActionStateGetInfo *info, XrActionStateBoolean *st) {
    LOCKED;
    int slot;
    XrResult r = action_state_slot(s, info, XR_ACTION_TYPE_BOOLEAN_INPUT, &slot);
    if (r != XR_SUCCESS) return r;
    CHECK_TYPE(st, XR_TYPE_ACTION_STATE_BOOLEAN);
    const ActState *a = &info->action->st[slot];
    st->currentState = a->v[0] != 0;
    st->changedSinceLastSync = a->changed;
    st->lastChangeTime = a->last;
    st->isActive = a->active;
    return XR_SUCCESS;
}

HOT_API xrGetActionStateFloat(XrSession s, const XrActionStateGetInfo *info, XrActionStateFloat *st) {
    LOCKED;
    int slot;
    XrResult r = action_state_slot(s, info, XR_ACTION_TYPE_FLOAT_INPUT, &slot);
    if (r != XR_SUCCESS) return r;
    CHECK_TYPE(st, XR_TYPE_ACTION_STATE_FLOAT);
    const ActState *a = &info->action->st[slot];
    st->currentState = a->v[0];
    st->changedSinceLastSync = a->changed;
    st->lastChangeTime = a->last;
    st->isActive = a->active;
    return XR_SUCCESS;
}

HOT_API xrGetActionStateVector2f(XrSession s, const XrActionStateGetInfo *info, XrActionStateVector2f *st) {
    LOCKED;
    int slot;
    XrResult r = action_state_slot(s, info, XR_ACTION_TYPE_VECTOR2F_INPUT, &slot);
    if (r != XR_SUCCESS) return r;
    CHECK_TYPE(st, XR_TYPE_ACTION_STATE_VECTOR2F);
    const ActState *a = &info->action->st[slot];
    st->currentState.x = a->v[0], st->currentState.y = a->v[1];
    st->changedSinceLastSync = a->changed;
    st->lastChangeTime = a->last;
    st->isActive = a->active;
    return XR_SUCCESS;
}

API xrGetActionStatePose(XrSession s, const XrActionStateGetInfo *info, XrActionStatePose *st) {
    LOCKED;
    int slot;
    XrResult r = action_state_slot(s, info, XR_ACTION_TYPE_POSE_INPUT, &slot);
    if (r != XR_SUCCESS) return r;
    CHECK_TYPE(st, XR_TYPE_ACTION_STATE_POSE);
    st->isActive = info->action->st[slot].active;
    return XR_SUCCESS;
}

API xrEnumerateBoundSourcesForAction(XrSession s, const XrBoundSourcesForActionEnumerateInfo *info,
                                     uint32_t capacity, uint32_t *countOut, XrPath *sources) {
    LOCKED;
    CHECK_SESSION(s);
    CHECK_TYPE(info, XR_TYPE_BOUND_SOURCES_FOR_ACTION_ENUMERATE_INFO);
    if (!obj_live(info->action, OBJ_ACTION)) return XR_ERROR_HANDLE_INVALID;
    XrAction a = info->action;
    if (!set_attached(s, a->set)) return XR_ERROR_ACTIONSET_NOT_ATTACHED;
    TWO_CALL(capacity, countOut, a->nsrc, sources);
    for (int i = 0; i < a->nsrc; i++) {
        char full[XR_MAX_PATH_LENGTH];
        snprintf(full, sizeof full, "%s%s", HAND_PATHS[a->src[i].hand], a->src[i].comp->suffix);
        sources[i] = path_intern(full);
    }
    return XR_SUCCESS;
}

API xrGetInputSourceLocalizedName(XrSession s, const XrInputSourceLocalizedNameGetInfo *info, uint32_t capacity,
                                  uint32_t *countOut, char *buffer) {
    LOCKED;
    CHECK_SESSION(s);
    CHECK_TYPE(info, XR_TYPE_INPUT_SOURCE_LOCALIZED_NAME_GET_INFO);
    if (!info->whichComponents) return XR_ERROR_VALIDATION_FAILURE;
    const char *src = path_str(info->sourcePath), *rest;
    if (!src) return XR_ERROR_PATH_INVALID;
    int hand = hand_prefix(src, &rest);
    if (hand < 0) return XR_ERROR_PATH_UNSUPPORTED;
    int p = s->profile[hand];
    char name[256] = "";
    size_t n = 0;
    if (info->whichComponents & XR_INPUT_SOURCE_LOCALIZED_NAME_USER_PATH_BIT)
        n += (size_t)snprintf(name + n, sizeof name - n, "%s", hand ? "Right Hand" : "Left Hand");
    if ((info->whichComponents & XR_INPUT_SOURCE_LOCALIZED_NAME_INTERACTION_PROFILE_BIT) && p >= 0)
        n += (size_t)snprintf(name + n, sizeof name - n, "%s%s", n ? " " : "", PROFILES[p].name);
    if (info->whichComponents & XR_INPUT_SOURCE_LOCALIZED_NAME_COMPONENT_BIT)
        snprintf(name + n, sizeof name - n, "%s%s", n ? " " : "", rest[0] == '/' ? rest + 1 : rest);
    return copy_string(name, capacity, countOut, buffer);
}

static XrResult haptic_target(XrSession s, const XrHapticActionInfo *info) {
    CHECK_SESSION(s);
    CHECK_TYPE(info, XR_TYPE_HAPTIC_ACTION_INFO);
    if (!obj_live(info->action, OBJ_ACTION)) return XR_ERROR_HANDLE_INVALID;
    if (info->action->type != XR_ACTION_TYPE_VIBRATION_OUTPUT) return XR_ERROR_ACTION_TYPE_MISMATCH;
    if (!set_attached(s, info->action->set)) return XR_ERROR_ACTIONSET_NOT_ATTACHED;
    if (sub_slot(info->subactionPath) < 0 || !action_has_sub(info->action, info->subactionPath))
        return XR_ERROR_PATH_UNSUPPORTED;
    return XR_SUCCESS;
}

API xrApplyHapticFeedback(XrSession s, const XrHapticActionInfo *info, const XrHapticBaseHeader *fb) {
    LOCKED;
    XrResult r = haptic_target(s, info);
    if (r != XR_SUCCESS) return r;
    CHECK_TYPE(fb, XR_TYPE_HAPTIC_VIBRATION);
    if (s->state != XR_SESSION_STATE_FOCUSED) return XR_SESSION_NOT_FOCUSED;
    const XrHapticVibration *v = (const void *)fb;
    int slot = sub_slot(info->subactionPath);
    XrAction a = info->action;
    for (int i = 0; i < a->nsrc; i++) {
        int hand = a->src[i].hand;
        if (slot != 0 && slot != hand + 1) continue;
        Haptic *h = &g_haptic[hand];
        h->count++;
        h->amplitude = v->amplitude, h->frequency = v->frequency, h->duration = v->duration;
        log_line("\"event\": \"haptic\", \"hand\": \"%s\", \"amplitude\": %g, \"duration\": %lld, \"frequency\": %g",
                 HAND_PATHS[hand], v->amplitude, (long long)v->duration, v->frequency);
    }
    return XR_SUCCESS;
}

API xrStopHapticFeedback(XrSession s, const XrHapticActionInfo *info) {
    LOCKED;
    XrResult r = haptic_target(s, info);
    if (r != XR_SUCCESS) return r;
    if (s->state != XR_SESSION_STATE_FOCUSED) return XR_SESSION_NOT_FOCUSED;
    int slot = sub_slot(info->subactionPath);
    for (int i = 0; i < info->action->nsrc; i++) {
        int hand = info->action->src[i].hand;
        if (slot == 0 || slot == hand + 1) g_haptic[hand].stops++;
    }
    return XR_SUCCESS;
}

/* ---- dispatch ---- */

API xrGetInstanceProcAddr(XrInstance inst, const char *name, PFN_xrVoidFunction *fn);

#define FN(name) {#name, (PFN_xrVoidFunction)name}
static const struct { const char *name; PFN_xrVoidFunction fn; } CORE[] = {
    FN(xrGetInstanceProcAddr), FN(xrEnumerateApiLayerProperties), FN(xrEnumerateInstanceExtensionProperties),
    FN(xrCreateInstance), FN(xrDestroyInstance), FN(xrGetInstanceProperties), FN(xrPollEvent),
    FN(xrResultToString), FN(xrStructureTypeToString), FN(xrGetSystem), FN(xrGetSystemProperties),
    FN(xrEnumerateEnvironmentBlendModes), FN(xrCreateSession), FN(xrDestroySession),
    FN(xrEnumerateReferenceSpaces), FN(xrCreateReferenceSpace), FN(xrGetReferenceSpaceBoundsRect),
    FN(xrCreateActionSpace), FN(xrLocateSpace), FN(xrDestroySpace), FN(xrEnumerateViewConfigurations),
    FN(xrGetViewConfigurationProperties), FN(xrEnumerateViewConfigurationViews),
    FN(xrEnumerateSwapchainFormats), FN(xrCreateSwapchain), FN(xrDestroySwapchain),
    FN(xrEnumerateSwapchainImages), FN(xrAcquireSwapchainImage), FN(xrWaitSwapchainImage),
    FN(xrReleaseSwapchainImage), FN(xrBeginSession), FN(xrEndSession), FN(xrRequestExitSession),
    FN(xrWaitFrame), FN(xrBeginFrame), FN(xrEndFrame), FN(xrLocateViews), FN(xrStringToPath),
    FN(xrPathToString), FN(xrCreateActionSet), FN(xrDestroyActionSet), FN(xrCreateAction),
    FN(xrDestroyAction), FN(xrSuggestInteractionProfileBindings), FN(xrAttachSessionActionSets),
    FN(xrGetCurrentInteractionProfile), FN(xrGetActionStateBoolean), FN(xrGetActionStateFloat),
    FN(xrGetActionStateVector2f), FN(xrGetActionStatePose), FN(xrSyncActions),
    FN(xrEnumerateBoundSourcesForAction), FN(xrGetInputSourceLocalizedName), FN(xrApplyHapticFeedback),
    FN(xrStopHapticFeedback),
};
#define NCORE (sizeof CORE / sizeof CORE[0])

API xrGetInstanceProcAddr(XrInstance inst, const char *name, PFN_xrVoidFunction *fn) {
    LOCKED;
    if (!name || !fn) return XR_ERROR_VALIDATION_FAILURE;
    *fn = NULL;
    if (inst == XR_NULL_HANDLE) {
        if (strcmp(name, "xrEnumerateInstanceExtensionProperties") == 0) *fn = (PFN_xrVoidFunction)xrEnumerateInstanceExtensionProperties;
        else if (strcmp(name, "xrEnumerateApiLayerProperties") == 0) *fn = (PFN_xrVoidFunction)xrEnumerateApiLayerProperties;
        else if (strcmp(name, "xrCreateInstance") == 0) *fn = (PFN_xrVoidFunction)xrCreateInstance;
        else if (strcmp(name, "xrGetInstanceProcAddr") == 0) *fn = (PFN_xrVoidFunction)xrGetInstanceProcAddr;
        return *fn ? XR_SUCCESS : XR_ERROR_HANDLE_INVALID;
    }
    CHECK_INSTANCE(inst);
    for (size_t i = 0; i < NCORE; i++)
        if (strcmp(CORE[i].name, name) == 0) return (*fn = CORE[i].fn), XR_SUCCESS;
    if (XR_VERSION_MINOR(inst->api) >= 1 && strcmp(name, "xrLocateSpaces") == 0)
        *fn = (PFN_xrVoidFunction)xrLocateSpaces;
    else if (inst->ext_gl && strcmp(name, "xrGetOpenGLGraphicsRequirementsKHR") == 0)
        *fn = (PFN_xrVoidFunction)xrGetOpenGLGraphicsRequirementsKHR;
    else if (inst->ext_timespec && strcmp(name, "xrConvertTimespecTimeToTimeKHR") == 0)
        *fn = (PFN_xrVoidFunction)xrConvertTimespecTimeToTimeKHR;
    else if (inst->ext_timespec && strcmp(name, "xrConvertTimeToTimespecTimeKHR") == 0)
        *fn = (PFN_xrVoidFunction)xrConvertTimeToTimespecTimeKHR;
    else if (inst->ext_win32time && strcmp(name, "xrConvertWin32PerformanceCounterToTimeKHR") == 0)
        *fn = (PFN_xrVoidFunction)xrConvertWin32PerformanceCounterToTimeKHR;
    else if (inst->ext_win32time && strcmp(name, "xrConvertTimeToWin32PerformanceCounterKHR") == 0)
        *fn = (PFN_xrVoidFunction)xrConvertTimeToWin32PerformanceCounterKHR;
    else if (inst->ext_refresh && strcmp(name, "xrEnumerateDisplayRefreshRatesFB") == 0)
        *fn = (PFN_xrVoidFunction)xrEnumerateDisplayRefreshRatesFB;
    else if (inst->ext_refresh && strcmp(name, "xrGetDisplayRefreshRateFB") == 0)
        *fn = (PFN_xrVoidFunction)xrGetDisplayRefreshRateFB;
    else if (inst->ext_refresh && strcmp(name, "xrRequestDisplayRefreshRateFB") == 0)
        *fn = (PFN_xrVoidFunction)xrRequestDisplayRefreshRateFB;
    return *fn ? XR_SUCCESS : XR_ERROR_FUNCTION_UNSUPPORTED;
}

EXPORT XrResult xrNegotiateLoaderRuntimeInterface(const XrNegotiateLoaderInfo *li, XrNegotiateRuntimeRequest *rr) {
    if (!li || li->structType != LOADER_STRUCT_LOADER_INFO || li->structVersion != 1 ||
        li->structSize != sizeof(XrNegotiateLoaderInfo))
        return XR_ERROR_INITIALIZATION_FAILED;
    if (!rr || rr->structType != LOADER_STRUCT_RUNTIME_REQUEST || rr->structVersion != 1 ||
        rr->structSize != sizeof(XrNegotiateRuntimeRequest))
        return XR_ERROR_INITIALIZATION_FAILED;
    if (li->minInterfaceVersion > 1 || li->maxInterfaceVersion < 1) return XR_ERROR_INITIALIZATION_FAILED;
    if (XR_VERSION_MAJOR(li->minApiVersion) > 1 || XR_VERSION_MAJOR(li->maxApiVersion) < 1)
        return XR_ERROR_INITIALIZATION_FAILED;
    XrVersion ours = XR_MAKE_VERSION(1, 1, 0);
    rr->runtimeInterfaceVersion = 1;
    rr->runtimeApiVersion = li->maxApiVersion < ours ? XR_MAKE_VERSION(1, 0, 0) : ours;
    rr->getInstanceProcAddr = xrGetInstanceProcAddr;
    return XR_SUCCESS;
}

/* ---- control API (ctypes, same dlopen handle as the loader) ---- */

EXPORT const char *mockxr_last_error(void) { LOCKED; return g_error; }

EXPORT void mockxr_clear_motion(void) {
    LOCKED;
    for (int i = 0; i < NSLOTS; i++) motion_free(&g_motion[i]), g_motion_by_control[i] = 0;
}

/* 0 on success, -1 when the file cannot be read, else the line number of the error. */
static int load_slot(int slot, const char *path) {
    int rc = path ? motion_load(&g_motion[slot], path) : -1;
    if (rc == 0) g_motion_by_control[slot] = 1;
    return rc;
}
EXPORT int mockxr_load_motion(const char *path) { LOCKED; return load_slot(SLOT_MOTION, path); }
EXPORT int mockxr_load_script(const char *path) { LOCKED; return load_slot(SLOT_SCRIPT, path); }
/* Parse a motion file without playing it, so that a bad file is reported (file:line) before the
 * loader creates an instance, instead of as an opaque XR_ERROR_RUNTIME_FAILURE from xrCreateInstance. */
EXPORT int mockxr_check_motion(const char *path) {
    LOCKED;
    if (!path) return set_error("no motion file given"), -1;
    Motion m;
    memset(&m, 0, sizeof m);
    int rc = motion_load(&m, path);
    motion_free(&m);
    return rc;
}

EXPORT void mockxr_reset(void) {
    LOCKED;
    mockxr_clear_motion();
    devices_default();
    g_throttle_set = g_emulated_set = g_rt_set = g_clock_set = 0;
    g_throttle = 1, g_emulated = PR_TOUCH, g_stage = 1, g_hmd = 1, g_want_focus = 1;
    g_rt = RT_MONADO, g_clock = CLOCK_REAL;
    g_refresh = (float)NOMINAL_RATE;
    g_frames_ended = g_frames_waited = 0;
    g_error[0] = 0;
    set_fail(NULL, 0, 0, 0), g_fail.by_control = g_fail.env_read = 0;
    capture_clear();
    g_capture.pending = 0;
    if (g_log) fclose(g_log), g_log = NULL;
}

EXPORT int mockxr_fail(const char *function, int result, int64_t after, int64_t times) {
    LOCKED;
    g_fail.by_control = 1;
    return set_fail(function, result, after, times);
}

EXPORT int mockxr_set_pose(const char *path, float px, float py, float pz, float qx, float qy, float qz, float qw) {
    LOCKED;
    int i = path ? pose_index(path) : -1;
    if (i < 0) return set_error("not a pose path: %s", path ? path : "(null)"), -1;
    g_dev.pose[i] = (XrPosef){{qx, qy, qz, qw}, {px, py, pz}};
    g_dev_gen++;
    return 0;
}

EXPORT int mockxr_get_pose(const char *path, float out[7]) {
    LOCKED;
    int i = path ? pose_index(path) : -1;
    if (i < 0) return set_error("not a pose path: %s", path ? path : "(null)"), -1;
    const Devices *d = devices_at(runtime_now());
    const XrPosef *p = &d->pose[i];
    float v[7] = {p->position.x, p->position.y, p->position.z, p->orientation.x, p->orientation.y,
                  p->orientation.z, p->orientation.w};
    memcpy(out, v, sizeof v);
    return 0;
}

static int set_input(const char *path, int want_dims, float x, float y) {
    int dims, i = path ? input_index(path, &dims) : -1;
    if (i < 0) return set_error("not an input path: %s", path ? path : "(null)"), -1;
    if (dims != want_dims) return set_error("%s takes %d value(s)", path, dims), -1;
    g_dev.in[i / NIN][i % NIN][0] = x;
    g_dev.in[i / NIN][i % NIN][1] = y;
    g_dev_gen++;
    return 0;
}

EXPORT int mockxr_set_float(const char *path, float v) { LOCKED; return set_input(path, 1, v, 0); }
EXPORT int mockxr_set_bool(const char *path, int v) { LOCKED; return set_input(path, 1, v ? 1.0f : 0.0f, 0); }
EXPORT int mockxr_set_vec2(const char *path, float x, float y) { LOCKED; return set_input(path, 2, x, y); }

EXPORT int mockxr_set_tracking(const char *path, uint64_t flags) {
    LOCKED;
    int i = path ? flags_index(path) : -1;
    if (i < 0) return set_error("tracking flags take /user/head, /user/hand/left or /user/hand/right"), -1;
    g_dev.flags[i] = flags & ALL_FLAGS;
    g_dev_gen++;
    return 0;
}

EXPORT int mockxr_command(const char *cmd) { LOCKED; return cmd ? run_command(cmd) : -1; }

EXPORT int mockxr_set_profile(const char *profile) {
    LOCKED;
    int p = profile_index(profile);
    if (p < 0) return set_error("unknown interaction profile %s", profile ? profile : "(null)"), -1;
    g_emulated = p, g_emulated_set = 1;
    if (g_session && g_session->nattached) resolve_profiles(g_session, 1);
    return 0;
}

EXPORT void mockxr_set_throttle(int on) { LOCKED; g_throttle = on != 0, g_throttle_set = 1; }

/* "monado", "steamvr" or "strict" (xr/mockrt/README.md); applies to the next instance's
 * extension list and to sessions from now on. */
EXPORT int mockxr_set_runtime_profile(const char *name) {
    LOCKED;
    int i = rt_index(name);
    if (i < 0) return set_error("unknown runtime profile %s (" RT_LIST ")", name ? name : "(null)"), -1;
    g_rt = i, g_rt_set = 1;
    return 0;
}

EXPORT const char *mockxr_runtime_profile(void) { LOCKED; rt_from_env(); return RT_NAMES[g_rt]; }

/* The extensions runtime profile `name` offers, space-separated (NULL: unknown profile). */
EXPORT const char *mockxr_profile_extensions(const char *name) {
    LOCKED;
    static char out[NEXTENSIONS * XR_MAX_EXTENSION_NAME_SIZE];
    int i = rt_index(name);
    if (i < 0) return set_error("unknown runtime profile %s (" RT_LIST ")", name ? name : "(null)"), NULL;
    out[0] = 0;
    for (uint32_t e = 0; e < NEXTENSIONS; e++)
        if ((RT_EXTENSIONS[i] >> e) & 1) {
            if (out[0]) strcat(out, " ");
            strcat(out, EXTENSIONS[e].extensionName);
        }
    return out;
}

/* The display changes its refresh rate by itself (a user's setting): the running session gets
 * XrEventDataDisplayRefreshRateChangedFB. The rate must be one xrEnumerateDisplayRefreshRatesFB lists. */
EXPORT int mockxr_set_refresh_rate(float rate) {
    LOCKED;
    if (refresh_change(rate) != XR_SUCCESS) return set_error("refresh rate %g is not one of 60, 72, 90, 120", rate), -1;
    return 0;
}

EXPORT float mockxr_refresh_rate(void) { LOCKED; return g_refresh; }

/* t > 0: the clock stands at t until moved (advance_clock, set_clock); t == 0: CLOCK_MONOTONIC again. */
EXPORT void mockxr_set_clock(int64_t t) {
    LOCKED;
    g_clock = t > 0 ? CLOCK_FROZEN : CLOCK_REAL, g_clock_set = 1;
    if (t > 0) g_virtual = t;
}

/* The step clock (see CLOCK_STEP), starting from the clock's current reading. */
EXPORT void mockxr_step_clock(void) {
    LOCKED;
    g_virtual = runtime_now();
    g_clock = CLOCK_STEP, g_clock_set = 1;
}

/* Move a virtual clock on by dt ns (>= 0); -1 on the real clock. */
EXPORT int mockxr_advance_clock(int64_t dt) {
    LOCKED;
    if (g_clock == CLOCK_REAL) return set_error("the real clock cannot be moved: set_clock first"), -1;
    if (dt < 0) return set_error("a clock does not go back (dt %lld)", (long long)dt), -1;
    g_virtual += dt;
    return 0;
}

EXPORT int64_t mockxr_now(void) { LOCKED; return runtime_now(); }

/* The running session's xrBeginSession time (motion time 0, frame slot 0); -1 when none runs. */
EXPORT int64_t mockxr_begin_time(void) { LOCKED; return g_session && g_session->running ? g_session->epoch : -1; }
EXPORT void mockxr_set_stage_supported(int on) { LOCKED; g_stage = on != 0; }
EXPORT void mockxr_set_hmd_present(int on) { LOCKED; g_hmd = on != 0; }

EXPORT int mockxr_get_haptics(const char *hand, int64_t *count, float *amplitude, int64_t *duration,
                              float *frequency, int64_t *stops) {
    LOCKED;
    int h = -1;
    for (int i = 0; i < 2; i++)
        if (hand && strcmp(hand, HAND_PATHS[i]) == 0) h = i;
    if (h < 0) return set_error("haptics are per hand: /user/hand/left or /user/hand/right"), -1;
    *count = g_haptic[h].count, *amplitude = g_haptic[h].amplitude, *duration = g_haptic[h].duration;
    *frequency = g_haptic[h].frequency, *stops = g_haptic[h].stops;
    return 0;
}

/* Read back the eye images of the next projection layer submitted (RGBA8/SRGB8_ALPHA8 swapchains). */
EXPORT void mockxr_capture_next_frame(void) {
    LOCKED;
    capture_clear();
    g_capture.pending = 1;
}

/* Frame index of the capture (-1 if none yet); with buf == NULL only width/height are given. */
EXPORT int64_t mockxr_get_capture(int eye, uint8_t *buf, int64_t size, int *width, int *height) {
    LOCKED;
    if (eye < 0 || eye > 1) return set_error("eye is 0 (left) or 1 (right)"), -1;
    *width = g_capture.width[eye], *height = g_capture.height[eye];
    int64_t need = (int64_t)g_capture.width[eye] * g_capture.height[eye] * 4;
    if (buf && g_capture.rgba[eye]) memcpy(buf, g_capture.rgba[eye], (size_t)(size < need ? size : need));
    return g_capture.rgba[eye] ? g_capture.frame : -1;
}

EXPORT int64_t mockxr_frames_ended(void) { LOCKED; return g_frames_ended; }
EXPORT int64_t mockxr_frames_waited(void) { LOCKED; return g_frames_waited; }
EXPORT int64_t mockxr_frame_index(void) { LOCKED; return g_session ? g_session->frame : -1; }
EXPORT int mockxr_session_state(void) { LOCKED; return g_session ? (int)g_session->state : 0; }
EXPORT int mockxr_instance_alive(void) { LOCKED; return g_instance != NULL; }

__attribute__((constructor)) static void mockxr_init(void) { devices_default(); }
