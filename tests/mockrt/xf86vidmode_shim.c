/*
 * An LD_PRELOAD stand-in for the three XFree86-VidModeExtension calls Debian's hello_xr makes
 * (its OpenGL window code reads the desktop's mode lines and could switch modes for full screen).
 * Xvfb has no such extension, so libXxf86vm fails there; this answers as a display whose only
 * mode is the screen's own size at 60 Hz, and mode switches succeed without changing anything.
 *
 * Written for headcast's tests (tests/mockrt/test_hello_xr.py builds it with gcc). No X headers
 * are needed: the struct is laid out as in <X11/extensions/xf86vmode.h>, and the screen size is
 * read through libX11, which hello_xr has loaded already.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct {
    unsigned int dotclock; /* kHz */
    unsigned short hdisplay, hsyncstart, hsyncend, htotal, hskew;
    unsigned short vdisplay, vsyncstart, vsyncend, vtotal;
    unsigned int flags;
    int privsize;
    int *private_data;
} ModeInfo;

static int screen_size(void *display, int screen, int *width, int *height) {
    int (*w)(void *, int) = (int (*)(void *, int))dlsym(RTLD_DEFAULT, "XDisplayWidth");
    int (*h)(void *, int) = (int (*)(void *, int))dlsym(RTLD_DEFAULT, "XDisplayHeight");
    if (!w || !h) return 0;
    *width = w(display, screen);
    *height = h(display, screen);
    return *width > 0 && *height > 0;
}

/* One block holding the pointer array and the modes, as libXxf86vm returns it: XFree (free) frees all. */
EXPORT int XF86VidModeGetAllModeLines(void *display, int screen, int *count, ModeInfo ***modes) {
    int width, height;
    if (!count || !modes || !screen_size(display, screen, &width, &height)) return 0;
    void *block = calloc(1, sizeof(ModeInfo *) + sizeof(ModeInfo));
    if (!block) return 0;
    ModeInfo **list = block;
    ModeInfo *m = (ModeInfo *)(list + 1);
    list[0] = m;
    m->hdisplay = (unsigned short)width, m->vdisplay = (unsigned short)height;
    m->hsyncstart = m->hdisplay + 16, m->hsyncend = m->hsyncstart + 32, m->htotal = m->hsyncend + 80;
    m->vsyncstart = m->vdisplay + 3, m->vsyncend = m->vsyncstart + 5, m->vtotal = m->vsyncend + 22;
    m->dotclock = (unsigned int)((unsigned long)m->htotal * m->vtotal * 60 / 1000); /* 60 Hz */
    *count = 1;
    *modes = list;
    return 1;
}

EXPORT int XF86VidModeSwitchToMode(void *display, int screen, ModeInfo *mode) {
    (void)display, (void)screen, (void)mode;
    return 1;
}

EXPORT int XF86VidModeSetViewPort(void *display, int screen, int x, int y) {
    (void)display, (void)screen, (void)x, (void)y;
    return 1;
}
