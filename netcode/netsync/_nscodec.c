/* Optional C accelerator of the NetSync pose codec (netcode/netsync/codec.py).
 *
 * The same arithmetic as codec.py's generated fast paths, operation for operation, in IEEE
 * double (compiled without contraction into FMA and without -ffast-math, so each + and * rounds
 * as Python's does): the same bytes out of the encoder, the same floats out of the decoders.
 * Only the common case is taken here: exact floats in exact tuples, fields in range, a
 * well-formed body. For anything else each function returns None and codec.py's pure-Python
 * path runs (it clamps, raises or decodes as it always did). tests/netsync/test_codec_native.py
 * holds the two paths to each other and to the shipped serializers.
 *
 * The receive path too: decode_room reads a whole room broadcast of our room in one call (and
 * hands back our own body's bytes as relayed), zmq_drain reads a ZeroMQ socket through libzmq's
 * own API, and sub_reader reads the SUB on a thread of its own (transport.py's sub_thread;
 * tests/netsync/test_native_reads.py holds them to the Python paths and to pyzmq).
 *
 * Built by the build backend (setup.py) into the wheel, or in place by
 * netcode/netsync/build_native.py (scripts/setup.sh); HEADCAST_PURE_PYTHON=1 leaves it unused.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#if defined(__linux__)
#define NS_ZMQ 1 /* dl_iterate_phdr: glibc / musl */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <unistd.h>
#endif

#define R_ 6755399441055744.0 /* 1.5 * 2**52: (v + R) - R rounds half to even */
#define QM 0.70710677
#define QR 1.41421354
#define MAXV 50
#define F_STEALTH 0x01
#define F_PHYSICAL 0x02
#define F_HEAD 0x04
#define F_RIGHT 0x08
#define F_LEFT 0x10
#define F_VIRTUALS 0x20
#define F_MOVING 0x40

static PyTypeObject *T_Transform, *T_Delta, *T_Body, *T_Client, *T_Entry;
static double DQ10[1024], DQ10_SQ[1024];
static double RAD, DEG;
static PyObject *S_flags, *S_head, *S_right, *S_left, *S_virtuals, *S_delta, *S_physical;

/* ------------------------------------------------------------------ helpers */

/* A NamedTuple instance (what tuple.__new__(cls, items) makes), items stolen. */
static PyObject *nt(PyTypeObject *cls, Py_ssize_t n, PyObject **items) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (items[i] == NULL) {
            for (Py_ssize_t j = 0; j < n; j++) Py_XDECREF(items[j]);
            return NULL;
        }
#if PY_VERSION_HEX >= 0x030E0000
    /* 3.14 caches a tuple's hash in the object: let tuple.__new__ initialise it */
    PyObject *t = PyTuple_New(n);
    if (t == NULL) { for (Py_ssize_t j = 0; j < n; j++) Py_DECREF(items[j]); return NULL; }
    for (Py_ssize_t i = 0; i < n; i++) PyTuple_SET_ITEM(t, i, items[i]);
    if (cls == &PyTuple_Type) return t;
    PyObject *args = PyTuple_Pack(1, t);
    Py_DECREF(t);
    if (args == NULL) return NULL;
    PyObject *o = PyTuple_Type.tp_new(cls, args, NULL);
    Py_DECREF(args);
    return o;
#else
    PyObject *o = cls == &PyTuple_Type ? PyTuple_New(n) : cls->tp_alloc(cls, n);
    if (o == NULL) { for (Py_ssize_t j = 0; j < n; j++) Py_DECREF(items[j]); return NULL; }
    for (Py_ssize_t i = 0; i < n; i++) PyTuple_SET_ITEM(o, i, items[i]);
    return o;
#endif
}

static PyObject *vec3(double x, double y, double z) {
    PyObject *it[3] = {PyFloat_FromDouble(x), PyFloat_FromDouble(y), PyFloat_FromDouble(z)};
    return nt(&PyTuple_Type, 3, it);
}

static PyObject *quat(double x, double y, double z, double w) {
    PyObject *it[4] = {PyFloat_FromDouble(x), PyFloat_FromDouble(y), PyFloat_FromDouble(z), PyFloat_FromDouble(w)};
    return nt(&PyTuple_Type, 4, it);
}

static PyObject *transform(double px, double py, double pz, double x, double y, double z, double w) {
    PyObject *it[2] = {vec3(px, py, pz), quat(x, y, z, w)};
    return nt(T_Transform, 2, it);
}

/* Python's float % (float_rem): the result takes the divisor's sign. */
static double pymod(double vx, double wx) {
    double mod = fmod(vx, wx);
    if (mod) {
        if ((wx < 0) != (mod < 0)) mod += wx;
    } else {
        mod = copysign(0.0, wx);
    }
    return mod;
}

static inline unsigned rd16(const unsigned char *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }
static inline int rdi16(const unsigned char *p) { return (int16_t)(uint16_t)rd16(p); }
static inline uint32_t rd32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline int rdi24(const unsigned char *p) {  /* low u16 + signed high byte */
    return (int)((int8_t)p[2]) * 65536 + (int)rd16(p);
}

/* ------------------------------------------------------------------ decoder */

/* decompress_quat / the generated decoder's inline form */
static void decompress(uint32_t p, double *q) {
    unsigned j = p >> 30, ia = (p >> 20) & 0x3FF, ib = (p >> 10) & 0x3FF, ic = p & 0x3FF;
    double s = DQ10_SQ[ia] + DQ10_SQ[ib] + DQ10_SQ[ic];
    double a = DQ10[ia], b = DQ10[ib], c = DQ10[ic];
    double big = s <= 1.0 ? sqrt(1.0 - s) : 0.0;
    if (j == 3) { q[0] = a; q[1] = b; q[2] = c; q[3] = big; }
    else if (j == 0) { q[0] = big; q[1] = a; q[2] = b; q[3] = c; }
    else if (j == 1) { q[0] = a; q[1] = big; q[2] = b; q[3] = c; }
    else { q[0] = a; q[1] = b; q[2] = big; q[3] = c; }
    if (!(s <= 1.0)) {  /* _wire_normalize */
        double m = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
        if (!(1e-12 < m && m < HUGE_VAL)) { q[0] = 0.0; q[1] = 0.0; q[2] = 0.0; q[3] = 1.0; }
        else {
            double inv = 1.0 / sqrt(m);
            q[0] = q[0] * inv; q[1] = q[1] * inv; q[2] = q[2] * inv; q[3] = q[3] * inv;
        }
    }
}

/* a hand/virtual at p: head-relative wire values -> absolute transform */
static PyObject *part(const unsigned char *p, double hx, double hy, double hz, const double *q) {
    double b[4];
    decompress(rd32(p + 6), b);
    double qx = q[0], qy = q[1], qz = q[2], qw = q[3], bx = b[0], by = b[1], bz = b[2], bw = b[3];
    return transform(hx + rdi16(p) * 0.005, hy + rdi16(p + 2) * 0.005, hz + rdi16(p + 4) * 0.005,
                     qw * bx + qx * bw + qy * bz - qz * by,
                     qw * by - qx * bz + qy * bw + qz * bx,
                     qw * bz + qx * by - qy * bx + qz * bw,
                     qw * bw - qx * bx - qy * by - qz * bz);
}

static int flags_ok(int flags, int family) {
    int known = family == 5 ? 0x7F : 0x3F;
    if (flags & ~known) return 0;
    if ((flags & F_STEALTH) && flags != F_STEALTH) return 0;
    if (!(flags & F_HEAD) && (flags & (F_RIGHT | F_LEFT | F_VIRTUALS))) return 0;
    return 1;
}

/* One body at d[off..size): the PoseBody, *end past it; NULL with no error set: not the common
 * case (the Python path decides); NULL with an error set: out of memory. */
static PyObject *body(const unsigned char *d, Py_ssize_t off, Py_ssize_t size, int family, Py_ssize_t *end) {
    if (off + 4 > size) return NULL;
    const unsigned char *p = d + off;
    unsigned seq = rd16(p);
    int flags = p[2], enc = p[3];
    if (!flags_ok(flags, family)) return NULL;
    int floor_local = (flags & F_PHYSICAL) && (flags & F_MOVING);
    if ((flags & F_PHYSICAL) && !floor_local && !(enc & 0x10)) return NULL;
    Py_ssize_t need = 4 + ((flags & F_PHYSICAL) ? (family == 3 ? 6 : 8) : 0);
    if (flags & F_HEAD) need += 13 + ((flags & F_RIGHT) ? 10 : 0) + ((flags & F_LEFT) ? 10 : 0);
    need += 1;
    if (off + need > size) return NULL;
    unsigned n = p[need - 1];
    if (n && (!(flags & F_VIRTUALS) || n > MAXV || off + need + 10 * (Py_ssize_t)n > size)) return NULL;
    p += 4;
    double dx = 0.0, dy = 0.0, dz = 0.0, dyaw = 0.0;
    PyObject *delta = NULL, *physical = NULL;
    if (flags & F_PHYSICAL) {
        if (family == 3) {
            dx = rdi16(p) * 0.01; dz = rdi16(p + 2) * 0.01; dyaw = rdi16(p + 4) * 0.1; dy = 0.0;
            p += 6;
        } else {
            double a = rdi16(p) * 0.01, b = rdi16(p + 2) * 0.01, c = rdi16(p + 4) * 0.01, y = rdi16(p + 6) * 0.1;
            p += 8;
            if (floor_local) {  /* floor_local_physical(x, y, z, yaw) */
                double half = y * RAD * 0.5;
                physical = transform(a, b, c, 0.0, sin(half), 0.0, cos(half));
                if (physical == NULL) return NULL;
            } else {
                dx = a; dy = b; dz = c; dyaw = y;
            }
        }
        if (!floor_local) {
            PyObject *it[4] = {PyFloat_FromDouble(dx), PyFloat_FromDouble(dz), PyFloat_FromDouble(dyaw), PyFloat_FromDouble(dy)};
            delta = nt(T_Delta, 4, it);
            if (delta == NULL) return NULL;
        }
    }
    PyObject *head = NULL, *right = NULL, *left = NULL, *virtuals = NULL;
    if (flags & F_HEAD) {
        double hx = rdi24(p) * 0.01, hy = rdi24(p + 3) * 0.01, hz = rdi24(p + 6) * 0.01, q[4];
        decompress(rd32(p + 9), q);
        p += 13;
        head = transform(hx, hy, hz, q[0], q[1], q[2], q[3]);
        if (head == NULL) goto fail;
        if (flags & F_RIGHT) { right = part(p, hx, hy, hz, q); p += 10; if (right == NULL) goto fail; }
        if (flags & F_LEFT) { left = part(p, hx, hy, hz, q); p += 10; if (left == NULL) goto fail; }
        p += 1;  /* virtualCount */
        virtuals = PyTuple_New(n);
        if (virtuals == NULL) goto fail;
        for (unsigned i = 0; i < n; i++, p += 10) {
            PyObject *t = part(p, hx, hy, hz, q);
            if (t == NULL) goto fail;
            PyTuple_SET_ITEM(virtuals, i, t);
        }
        if (delta != NULL) {  /* origin.reconstruct_physical(head, delta), inlined as in codec.py */
            double r = -dyaw * RAD;
            double c = cos(r), s = sin(r);
            double tx = hx - dx, tz = hz - dz;
            double x = q[0], y = q[1], z = q[2], w = q[3];
            double m = x * x + y * y + z * z + w * w;
            if (m != 1.0) {
                double inv = 1.0 / sqrt(m);
                x = x * inv; y = y * inv; z = z * inv; w = w * inv;
            }
            double head_yaw = pymod(atan2(2.0 * (w * y + z * x), 1.0 - 2.0 * (y * y + z * z)) * DEG + 180.0, 360.0) - 180.0;
            double half = (pymod(head_yaw - dyaw + 180.0, 360.0) - 180.0) * RAD * 0.5;
            physical = transform(c * tx + s * tz, hy - dy, -s * tx + c * tz, 0.0, sin(half), 0.0, cos(half));
            if (physical == NULL) goto fail;
        }
    } else {
        p += 1;
        virtuals = PyTuple_New(0);
        if (virtuals == NULL) goto fail;
    }
    *end = p - d;
    {
        PyObject *none[4] = {head, right, left, physical};
        for (int i = 0; i < 4; i++) if (none[i] == NULL) { none[i] = Py_None; Py_INCREF(Py_None); }
        PyObject *dl = delta;
        if (dl == NULL) { dl = Py_None; Py_INCREF(Py_None); }
        PyObject *it[9] = {PyLong_FromLong(seq), PyLong_FromLong(flags), PyLong_FromLong(enc), dl,
                           none[0], none[1], none[2], virtuals, none[3]};
        return nt(T_Body, 9, it);
    }
fail:
    Py_XDECREF(delta); Py_XDECREF(physical); Py_XDECREF(head); Py_XDECREF(right); Py_XDECREF(left);
    Py_XDECREF(virtuals);
    return NULL;
}

static int get_buffer(PyObject *obj, Py_buffer *view) {
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) { PyErr_Clear(); return 0; }
    return 1;
}

/* decode_body(data, offset, family, size) -> (PoseBody, end) | None */
static PyObject *py_decode_body(PyObject *self, PyObject *args) {
    PyObject *data; Py_ssize_t off, size; int family;
    if (!PyArg_ParseTuple(args, "Onin", &data, &off, &family, &size)) return NULL;
    Py_buffer v;
    if (!get_buffer(data, &v)) Py_RETURN_NONE;
    PyObject *res = NULL;
    Py_ssize_t end = 0;
    if (off >= 0 && size <= v.len) {
        PyObject *b = body(v.buf, off, size, family, &end);
        if (b != NULL) res = Py_BuildValue("(Nn)", b, end);
    }
    PyBuffer_Release(&v);
    if (res == NULL && !PyErr_Occurred()) Py_RETURN_NONE;
    return res;
}

/* decode_room_entries(data, pos, count, family) -> (tuple of RoomEntry, end) | None */
static PyObject *py_decode_room_entries(PyObject *self, PyObject *args) {
    PyObject *data; Py_ssize_t pos, count; int family;
    if (!PyArg_ParseTuple(args, "Onni", &data, &pos, &count, &family)) return NULL;
    Py_buffer v;
    if (!get_buffer(data, &v)) Py_RETURN_NONE;
    const unsigned char *d = v.buf;
    Py_ssize_t size = v.len;
    PyObject *entries = count >= 0 ? PyTuple_New(count) : NULL, *res = NULL;
    if (entries == NULL) goto out;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (pos < 0 || pos + 10 > size) goto out;
        unsigned client_no = rd16(d + pos);
        double pose_time;
        memcpy(&pose_time, d + pos + 2, 8);  /* little-endian hosts only: checked at import */
        Py_ssize_t end;
        PyObject *b = body(d, pos + 10, size, family, &end);
        if (b == NULL) goto out;
        PyObject *it[3] = {PyLong_FromLong(client_no), PyFloat_FromDouble(pose_time), b};
        PyObject *e = nt(T_Entry, 3, it);
        if (e == NULL) goto out;
        PyTuple_SET_ITEM(entries, i, e);
        pos = end;
    }
    res = Py_BuildValue("(On)", entries, pos);
out:
    Py_XDECREF(entries);
    PyBuffer_Release(&v);
    if (res == NULL && !PyErr_Occurred()) Py_RETURN_NONE;
    return res;
}

/* decode_room(data, protocol, topic, own) -> (broadcastTime, entries, own body's bytes | None) | None:
 * a whole room broadcast (message 12) of `protocol` for the room whose id is `topic` (its bytes),
 * every entry as decode_room_entries decodes it, and the bytes of the body of clientNo `own` (-1:
 * none) as relayed (None when it is not there, or there twice). None for anything else (another type, protocol or room, a bad or truncated
 * entry, trailing bytes): the Python path then decides (and raises what it finds). */
static PyObject *py_decode_room(PyObject *self, PyObject *args) {
    PyObject *data, *topic, *res = NULL, *entries = NULL, *raw = NULL;
    int protocol;
    long own;
    if (!PyArg_ParseTuple(args, "OiO!l", &data, &protocol, &PyBytes_Type, &topic, &own)) return NULL;
    if (!PyBytes_Check(data) || protocol < 3 || protocol > 8) Py_RETURN_NONE;
    const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(data);
    Py_ssize_t size = PyBytes_GET_SIZE(data), n = PyBytes_GET_SIZE(topic);
    if (size < 3 || d[0] != 12 || d[1] != protocol || d[2] != n || 3 + n + 10 > size
        || memcmp(d + 3, PyBytes_AS_STRING(topic), (size_t)n) != 0)
        Py_RETURN_NONE;
    int family = protocol == 3 ? 3 : protocol == 4 ? 4 : 5;
    Py_ssize_t pos = 3 + n;
    int owns = 0;
    double broadcast_time;
    memcpy(&broadcast_time, d + pos, 8); /* little-endian hosts only: checked at import */
    Py_ssize_t count = rd16(d + pos + 8);
    pos += 10;
    entries = PyTuple_New(count);
    if (entries == NULL) return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (pos + 10 > size) goto out;
        unsigned client_no = rd16(d + pos);
        double pose_time;
        memcpy(&pose_time, d + pos + 2, 8);
        Py_ssize_t end;
        PyObject *b = body(d, pos + 10, size, family, &end);
        if (b == NULL) goto out;
        if ((long)client_no == own && ++owns == 1) {
            raw = PyBytes_FromStringAndSize((const char *)d + pos + 10, end - pos - 10);
            if (raw == NULL) { Py_DECREF(b); goto out; }
        }
        PyObject *it[3] = {PyLong_FromLong(client_no), PyFloat_FromDouble(pose_time), b};
        PyObject *e = nt(T_Entry, 3, it);
        if (e == NULL) goto out;
        PyTuple_SET_ITEM(entries, i, e);
        pos = end;
    }
    if (pos != size) goto out;
    if (owns > 1) Py_CLEAR(raw); /* our number twice (a broken server): no bytes, which one is ours? */
    if (raw == NULL) { raw = Py_None; Py_INCREF(raw); }
    res = Py_BuildValue("(dOO)", broadcast_time, entries, raw);
out:
    Py_XDECREF(entries);
    Py_XDECREF(raw);
    if (res == NULL && !PyErr_Occurred()) Py_RETURN_NONE;
    return res;
}

/* decode_client_pose(data, expect) -> ClientPose | None  (expect: a protocol, or 0 for any) */
static PyObject *py_decode_client_pose(PyObject *self, PyObject *args) {
    PyObject *data; int expect;
    if (!PyArg_ParseTuple(args, "Oi", &data, &expect)) return NULL;
    /* codec.py decodes the deviceId with .decode(): bytes and bytearray have it, a memoryview not */
    if (!PyBytes_Check(data) && !PyByteArray_Check(data)) Py_RETURN_NONE;
    Py_buffer v;
    if (!get_buffer(data, &v)) Py_RETURN_NONE;
    const unsigned char *d = v.buf;
    Py_ssize_t size = v.len, start, end;
    PyObject *res = NULL;
    int protocol = size > 2 ? d[1] : 0;
    if (size > 2 && d[0] == 11 && protocol >= 3 && protocol <= 8 && (expect == 0 || expect == protocol)) {
        start = 3 + (Py_ssize_t)d[2];
        if (start + 4 <= size) {
            PyObject *dev = PyUnicode_DecodeUTF8((const char *)d + 3, start - 3, NULL);
            if (dev == NULL) PyErr_Clear();
            else {
                PyObject *b = body(d, start, size, protocol == 3 ? 3 : protocol == 4 ? 4 : 5, &end);
                if (b != NULL && end == size) {
                    PyObject *it[4] = {dev, b, PyBytes_FromStringAndSize((const char *)d + start, size - start),
                                       PyLong_FromLong(protocol)};
                    res = nt(T_Client, 4, it);
                } else {
                    Py_DECREF(dev);
                    Py_XDECREF(b);
                }
            }
        }
    }
    PyBuffer_Release(&v);
    if (res == NULL && !PyErr_Occurred()) Py_RETURN_NONE;
    return res;
}

/* ------------------------------------------------------------------ encoder */

/* floor(v + R - R) as an integer in [lo, hi]; 0 when out of range or not finite */
static inline int rnd(double v, double lo, double hi, long *out) {
    double r = floor(v + R_ - R_);
    if (!(r >= lo && r <= hi)) return 0;
    *out = (long)r;
    return 1;
}

static int getf(PyObject *t, Py_ssize_t i, double *out) {
    PyObject *o = PyTuple_GET_ITEM(t, i);
    if (!PyFloat_CheckExact(o)) return 0;
    *out = PyFloat_AS_DOUBLE(o);
    return 1;
}

/* ((px, py, pz), (x, y, z, w)) of exact tuples (a Transform or a plain tuple) of exact floats */
static int read_transform(PyObject *t, double *pos, double *q) {
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 2) return 0;
    PyObject *a = PyTuple_GET_ITEM(t, 0), *b = PyTuple_GET_ITEM(t, 1);
    if (!PyTuple_CheckExact(a) || PyTuple_GET_SIZE(a) != 3 || !PyTuple_CheckExact(b) || PyTuple_GET_SIZE(b) != 4)
        return 0;
    for (int i = 0; i < 3; i++) if (!getf(a, i, pos + i)) return 0;
    for (int i = 0; i < 4; i++) if (!getf(b, i, q + i)) return 0;
    return 1;
}

static void normalize_once(double *q) {  /* _src_normalize, once */
    double m = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
    if (1e-12 < m && m <= 1.7976931348623157e308) {
        if (m != 1.0) {
            double inv = 1.0 / sqrt(m);
            q[0] = q[0] * inv; q[1] = q[1] * inv; q[2] = q[2] * inv; q[3] = q[3] * inv;
        }
    } else {
        q[0] = 0.0; q[1] = 0.0; q[2] = 0.0; q[3] = 1.0;
    }
}

static void normalize_twice(double *q) {  /* _src_normalize(twice=True): the head */
    double m = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
    if (1e-12 < m && m <= 1.7976931348623157e308) {
        if (m != 1.0) {
            double inv = 1.0 / sqrt(m);
            q[0] = q[0] * inv; q[1] = q[1] * inv; q[2] = q[2] * inv; q[3] = q[3] * inv;
            m = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
            if (m != 1.0) {
                inv = 1.0 / sqrt(m);
                q[0] = q[0] * inv; q[1] = q[1] * inv; q[2] = q[2] * inv; q[3] = q[3] * inv;
            }
        }
    } else {
        q[0] = 0.0; q[1] = 0.0; q[2] = 0.0; q[3] = 1.0;
    }
}

static uint32_t pack(double x, double y, double z, double w) {  /* _src_pack */
    double ax = x >= 0.0 ? x : -x, ay = y >= 0.0 ? y : -y, az = z >= 0.0 ? z : -z, aw = w >= 0.0 ? w : -w;
    double i, big, a, b, c;
    if (ax >= ay && ax >= az && ax >= aw) { i = 0.0; big = x; a = y; b = z; c = w; }
    else if (ay >= az && ay >= aw) { i = 1073741824.0; big = y; a = x; b = z; c = w; }
    else if (az >= aw) { i = 2147483648.0; big = z; a = x; b = y; c = w; }
    else { i = 3221225472.0; big = w; a = x; b = y; c = z; }
    if (big < 0.0) { a = -a; b = -b; c = -c; }
    a = a < -QM ? -QM : a > QM ? QM : a;
    b = b < -QM ? -QM : b > QM ? QM : b;
    c = c < -QM ? -QM : c > QM ? QM : c;
    double r = floor(i + ((a + QM) / QR * 1023.0 + R_ - R_) * 1048576.0
                     + ((b + QM) / QR * 1023.0 + R_ - R_) * 1024.0
                     + ((c + QM) / QR * 1023.0 + R_ - R_));
    return (uint32_t)r;
}

static inline unsigned char *w16(unsigned char *o, long v) { o[0] = v & 0xFF; o[1] = (v >> 8) & 0xFF; return o + 2; }
static inline unsigned char *w32(unsigned char *o, uint32_t v) {
    o[0] = v & 0xFF; o[1] = (v >> 8) & 0xFF; o[2] = (v >> 16) & 0xFF; o[3] = v >> 24; return o + 4;
}

/* _src_relative: a hand/virtual relative to the head (h: position; c: conj(head)) */
static unsigned char *relative(unsigned char *o, PyObject *t, const double *h, const double *cq, int *ok) {
    double pos[3], b[4];
    long x, y, z;
    if (!read_transform(t, pos, b)
        || !rnd((pos[0] - h[0]) / 0.005, -32768, 32767, &x) || !rnd((pos[1] - h[1]) / 0.005, -32768, 32767, &y)
        || !rnd((pos[2] - h[2]) / 0.005, -32768, 32767, &z)) { *ok = 0; return o; }
    normalize_once(b);
    double cx = cq[0], cy = cq[1], cz = cq[2], qw = cq[3], bx = b[0], by = b[1], bz = b[2], bw = b[3];
    double rx = qw * bx + cx * bw + cy * bz - cz * by;
    double ry = qw * by - cx * bz + cy * bw + cz * bx;
    double rz = qw * bz + cx * by - cy * bx + cz * bw;
    double rw = qw * bw - cx * bx - cy * by - cz * bz;
    double m = rx * rx + ry * ry + rz * rz + rw * rw;
    if (m != 1.0) {
        if (!(m > 0.0 && m < HUGE_VAL)) { *ok = 0; return o; }
        double inv = 1.0 / sqrt(m);
        rx = rx * inv; ry = ry * inv; rz = rz * inv; rw = rw * inv;
    }
    o = w16(o, x); o = w16(o, y); o = w16(o, z);
    return w32(o, pack(rx, ry, rz, rw));
}

/* encode(prefix, frame, seq, protocol) -> prefix + body | None.  seq < 0: the tail (no poseSeq). */
static PyObject *py_encode(PyObject *self, PyObject *args) {
    PyObject *prefix, *frame;
    long seq;
    int protocol;
    if (!PyArg_ParseTuple(args, "SOli", &prefix, &frame, &seq, &protocol)) return NULL;
    if (protocol < 3 || protocol > 8 || seq > 0xFFFF) Py_RETURN_NONE;
    int family = protocol == 3 ? 3 : protocol == 4 ? 4 : 5;
    unsigned char buf[4 + 8 + 13 + 20 + 1 + 10 * MAXV], *o = buf;
    PyObject *fo = PyObject_GetAttr(frame, S_flags);
    if (fo == NULL) { PyErr_Clear(); Py_RETURN_NONE; }
    long flags = PyLong_CheckExact(fo) ? PyLong_AsLong(fo) : -1;
    Py_DECREF(fo);
    if (flags == -1 && PyErr_Occurred()) { PyErr_Clear(); Py_RETURN_NONE; }
    if (flags < 0 || flags > 255 || (flags & ~(family == 5 ? 0x7F : 0x3F))) Py_RETURN_NONE;
    /* sanitize_flags */
    int sf = (int)flags;
    if (sf & F_STEALTH) sf = F_STEALTH;
    else if (!(sf & F_HEAD)) sf &= ~(F_RIGHT | F_LEFT | F_VIRTUALS);
    if (seq >= 0) o = w16(o, seq);
    *o++ = (unsigned char)sf;
    *o++ = (sf & F_MOVING) ? 0x0F : 0x1F;
    PyObject *a = NULL;
    int ok = 1;
    if (sf & F_PHYSICAL) {
        if (sf & F_MOVING) {  /* _physical_args: _q16 (round, clamp) and receiver_yaw */
            double pos[3], q[4], yaw;
            a = PyObject_GetAttr(frame, S_physical);
            if (a == NULL || !read_transform(a, pos, q)) goto fallback;
            Py_CLEAR(a);
            double m = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
            if (!(1e-12 < m && m < HUGE_VAL)) yaw = 0.0;
            else {
                double inv = 1.0 / sqrt(m), x = q[0] * inv, y = q[1] * inv, z = q[2] * inv, w = q[3] * inv;
                yaw = pymod(atan2(2.0 * (w * y + z * x), 1.0 - 2.0 * (y * y + z * z)) * DEG + 180.0, 360.0) - 180.0;
            }
            double v[4] = {pos[0] / 0.01, pos[1] / 0.01, pos[2] / 0.01, yaw / 0.1};
            for (int i = 0; i < 4; i++) {
                if (!isfinite(v[i])) goto fallback;
                double r = nearbyint(v[i]);  /* round(): half to even */
                o = w16(o, r < -32768 ? -32768 : r > 32767 ? 32767 : (long)r);
            }
        } else {
            a = PyObject_GetAttr(frame, S_delta);
            if (a == NULL || !PyTuple_Check(a) || PyTuple_GET_SIZE(a) != 4) goto fallback;
            double dx, dz, dyaw, dy;
            long d0, d1, d2, d3;
            if (!getf(a, 0, &dx) || !getf(a, 1, &dz) || !getf(a, 2, &dyaw) || !getf(a, 3, &dy)) goto fallback;
            Py_CLEAR(a);
            if (!rnd(dx / 0.01, -32768, 32767, &d0) || !rnd(dz / 0.01, -32768, 32767, &d2)
                || !rnd(dyaw / 0.1, -32768, 32767, &d3)) goto fallback;
            o = w16(o, d0);
            if (family != 3) {
                if (!rnd(dy / 0.01, -32768, 32767, &d1)) goto fallback;
                o = w16(o, d1);
            }
            o = w16(o, d2); o = w16(o, d3);
        }
    }
    if (sf & F_HEAD) {
        double h[3], q[4], c[4];
        long x, y, z;
        a = PyObject_GetAttr(frame, S_head);
        if (a == NULL || !read_transform(a, h, q)) goto fallback;
        Py_CLEAR(a);
        if (!rnd(h[0] / 0.01, -8388608, 8388607, &x) || !rnd(h[1] / 0.01, -8388608, 8388607, &y)
            || !rnd(h[2] / 0.01, -8388608, 8388607, &z)) goto fallback;
        normalize_twice(q);
        long xyz[3] = {x, y, z};
        for (int i = 0; i < 3; i++) { o[0] = xyz[i] & 0xFF; o[1] = (xyz[i] >> 8) & 0xFF; o[2] = (xyz[i] >> 16) & 0xFF; o += 3; }
        o = w32(o, pack(q[0], q[1], q[2], q[3]));
        c[0] = -q[0]; c[1] = -q[1]; c[2] = -q[2]; c[3] = q[3];
        if (sf & F_RIGHT) {
            a = PyObject_GetAttr(frame, S_right);
            if (a == NULL) goto fallback;
            o = relative(o, a, h, c, &ok);
            if (!ok) goto fallback;
            Py_CLEAR(a);
        }
        if (sf & F_LEFT) {
            a = PyObject_GetAttr(frame, S_left);
            if (a == NULL) goto fallback;
            o = relative(o, a, h, c, &ok);
            if (!ok) goto fallback;
            Py_CLEAR(a);
        }
        if (sf & F_VIRTUALS) {
            a = PyObject_GetAttr(frame, S_virtuals);
            if (a == NULL || !PyTuple_Check(a)) goto fallback;
            Py_ssize_t n = PyTuple_GET_SIZE(a);
            if (n > MAXV) n = MAXV;
            *o++ = (unsigned char)n;
            for (Py_ssize_t i = 0; i < n; i++) {
                o = relative(o, PyTuple_GET_ITEM(a, i), h, c, &ok);
                if (!ok) goto fallback;
            }
            Py_CLEAR(a);
        } else {
            *o++ = 0;
        }
    } else {
        *o++ = 0;
    }
    {
        Py_ssize_t np = PyBytes_GET_SIZE(prefix), nb = o - buf;
        PyObject *out = PyBytes_FromStringAndSize(NULL, np + nb);
        if (out == NULL) return NULL;
        memcpy(PyBytes_AS_STRING(out), PyBytes_AS_STRING(prefix), np);
        memcpy(PyBytes_AS_STRING(out) + np, buf, nb);
        return out;
    }
fallback:
    Py_XDECREF(a);
    PyErr_Clear();
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ ZeroMQ reads (transport.py)
 *
 * The transport's reads of its SUB and control DEALER through libzmq's C API: zmq_msg_recv with
 * ZMQ_DONTWAIT until EAGAIN, each message's frames as bytes, with no Python call per frame. Not
 * linked against libzmq: the functions are looked up in the libzmq pyzmq has already loaded
 * (zmq_bind()), so this extension builds and imports without ZeroMQ and the codec never needs
 * it. The few declarations below are libzmq's stable ABI (zmq_msg_t is 64 bytes since 4.0). */

#ifdef NS_ZMQ
typedef union { unsigned char bytes[64]; void *align_p; double align_d; } zmsg_t;
static int (*z_msg_init)(zmsg_t *);
static int (*z_msg_recv)(zmsg_t *, void *, int);
static int (*z_msg_close)(zmsg_t *);
static void *(*z_msg_data)(zmsg_t *);
static size_t (*z_msg_size)(const zmsg_t *);
static int (*z_msg_more)(const zmsg_t *);
static int (*z_errno)(void);
static void (*z_version)(int *, int *, int *);
typedef struct { void *socket; int fd; short events; short revents; } zpollitem_t;
static int (*z_poll)(zpollitem_t *, int, long);
static int (*z_send)(void *, const void *, size_t, int); /* zmq_send2's; NULL: not found */
#define Z_DONTWAIT 1
#define Z_SNDMORE 2
#define Z_MAX_FRAMES 16 /* a message with more is read whole and handed on as [] (the core drops it) */

struct zfind { char path[4096]; int found; };

static int find_libzmq(struct dl_phdr_info *info, size_t size, void *data) {
    struct zfind *f = data;
    const char *name = info->dlpi_name, *base = name ? strrchr(name, '/') : NULL;
    base = base ? base + 1 : name;
    if (base != NULL && strncmp(base, "libzmq", 6) == 0 && strlen(name) < sizeof f->path) {
        if (f->found && strcmp(f->path, name) != 0) f->found = 2; /* two different libzmq: refuse */
        else if (!f->found) { strcpy(f->path, name); f->found = 1; }
    }
    return 0;
}

/* zmq_bind() -> (major, minor, patch) of the loaded libzmq, or None (none loaded, two of them, a
 * symbol missing): then the transport reads through pyzmq. Call after importing zmq. */
static PyObject *py_zmq_bind(PyObject *self, PyObject *noargs) {
    if (z_msg_recv != NULL) goto done;
    struct zfind f = {{0}, 0};
    dl_iterate_phdr(find_libzmq, &f);
    if (f.found != 1) Py_RETURN_NONE;
    void *h = dlopen(f.path, RTLD_NOW | RTLD_NOLOAD);
    if (h == NULL) Py_RETURN_NONE;
    void *s[9] = {dlsym(h, "zmq_msg_init"), dlsym(h, "zmq_msg_recv"), dlsym(h, "zmq_msg_close"),
                  dlsym(h, "zmq_msg_data"), dlsym(h, "zmq_msg_size"), dlsym(h, "zmq_msg_more"),
                  dlsym(h, "zmq_errno"), dlsym(h, "zmq_version"), dlsym(h, "zmq_poll")};
    for (int i = 0; i < 9; i++) if (s[i] == NULL) { dlclose(h); Py_RETURN_NONE; }
    /* (the handle stays open: libzmq stays loaded while these are used) */
    *(void **)&z_msg_init = s[0]; *(void **)&z_msg_close = s[2]; *(void **)&z_msg_data = s[3];
    *(void **)&z_msg_size = s[4]; *(void **)&z_msg_more = s[5]; *(void **)&z_errno = s[6];
    *(void **)&z_version = s[7]; *(void **)&z_poll = s[8];
    *(void **)&z_send = dlsym(h, "zmq_send"); /* (optional: without it the sends stay pyzmq's) */
    int major = 0, minor = 0, patch = 0;
    z_version(&major, &minor, &patch);
    if (major != 4) Py_RETURN_NONE; /* another ABI: z_msg_recv stays NULL, so not bound */
    *(void **)&z_msg_recv = s[1];
done:;
    int a = 0, b = 0, c = 0;
    z_version(&a, &b, &c);
    return Py_BuildValue("(iii)", a, b, c);
}

/* zmq_send2(socket, first, second) -> 0, or an errno: a two-part message (the room topic, then a
 * pose) sent on the libzmq socket at address `socket` as the transport's pyzmq path sends it:
 * zmq_send(first, SNDMORE | DONTWAIT), then zmq_send(second, DONTWAIT), the GIL held (neither
 * waits). A multipart message is queued whole or not at all, so only the first part can meet a
 * full queue or (IMMEDIATE) no connection: its errno is returned as it is (EAGAIN: nothing
 * queued); a failure of the second part as -errno. EINTR is retried after the signal handlers. */
static PyObject *py_zmq_send2(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyBytes_Check(args[1]) || !PyBytes_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "zmq_send2(socket address, bytes, bytes)");
        return NULL;
    }
    if (z_send == NULL || z_msg_recv == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "zmq_bind() first");
        return NULL;
    }
    unsigned long long addr = PyLong_AsUnsignedLongLong(args[0]);
    if (addr == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    void *sock = (void *)(uintptr_t)addr;
    for (int i = 1; i <= 2; i++) {
        PyObject *b = args[i];
        while (z_send(sock, PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b), i == 1 ? Z_SNDMORE | Z_DONTWAIT : Z_DONTWAIT) < 0) {
            int err = z_errno();
            if (err != EINTR) return PyLong_FromLong(i == 1 ? err : -err);
            if (PyErr_CheckSignals() < 0) return NULL;
        }
    }
    return PyLong_FromLong(0);
}

/* zmq_drain(socket, limit) -> (messages, status): up to `limit` messages read from the libzmq
 * socket at address `socket` (pyzmq's Socket.underlying), each a list of its frames as bytes;
 * status 0 = read until EAGAIN (the socket's ZMQ_FD edge is re-armed), 1 = `limit` reached (more
 * may wait), else the errno of a failed read (the messages before it are still returned). */
static PyObject *py_zmq_drain(PyObject *self, PyObject *args) {
    unsigned long long addr;
    int limit;
    if (!PyArg_ParseTuple(args, "Ki", &addr, &limit)) return NULL;
    if (z_msg_recv == NULL) { PyErr_SetString(PyExc_RuntimeError, "zmq_bind() first"); return NULL; }
    void *sock = (void *)(uintptr_t)addr;
    PyObject *out = PyList_New(0), *msg = NULL;
    if (out == NULL) return NULL;
    int status = 1;
    for (int i = 0; i < limit && status == 1; i++) {
        msg = NULL;
        for (int more = 1; more;) {
            zmsg_t m;
            z_msg_init(&m);
            if (z_msg_recv(&m, sock, Z_DONTWAIT) < 0) {
                int err = z_errno();
                z_msg_close(&m);
                if (err == EINTR) {
                    if (PyErr_CheckSignals() < 0) goto fail;
                    continue;
                }
                /* EAGAIN before a message: drained. Mid-message (a multipart message is queued
                 * whole: never seen) the parts read so far go on as they are. */
                status = msg == NULL && err == EAGAIN ? 0 : err;
                break;
            }
            more = z_msg_more(&m);
            PyObject *b = PyBytes_FromStringAndSize((const char *)z_msg_data(&m), (Py_ssize_t)z_msg_size(&m));
            z_msg_close(&m);
            if (b == NULL || (msg == NULL && (msg = PyList_New(0)) == NULL)) { Py_XDECREF(b); goto fail; }
            int rc = PyList_Append(msg, b);
            Py_DECREF(b);
            if (rc < 0) goto fail;
        }
        if (msg != NULL) {
            int rc = PyList_Append(out, msg);
            Py_CLEAR(msg);
            if (rc < 0) goto fail;
        }
    }
    return Py_BuildValue("(Ni)", out, status);
fail:
    Py_XDECREF(msg);
    Py_DECREF(out);
    return NULL;
}


/* ------------------------------------------------------------------ a SUB read off the frame thread
 *
 * sub_reader(socket, address) -> a reader: a thread that owns the SUB socket (pyzmq's, whose
 * libzmq socket is at `address`; held, so it is not closed as garbage while read) from then on (ZeroMQ sockets
 * move between threads at a full barrier: pthread_create, pthread_join), waits in zmq_poll and
 * reads every message as it comes into a ring of READER_RING messages (the oldest goes when it is
 * full, counted). reader_take(reader) -> (messages, lost, errno), or None when there is nothing,
 * hands them over without a system call; reader_stop(reader) ends the thread (a byte on its wake pipe) and joins it, after which the
 * socket is the caller's again (to close). The thread never touches a Python object. */

#define READER_RING 16

typedef struct {
    void *sock;
    PyObject *owner; /* the pyzmq socket: not closed (garbage) while the thread reads it */
    int wake[2];
    pthread_t th;
    pthread_mutex_t mu;
    char *buf[READER_RING];
    size_t len[READER_RING];
    int head, count, err, running;
    int pending; /* anything to take (messages, a loss, a failed read): read without the lock */
    unsigned long long lost;
} reader_t;

static void reader_push(reader_t *r, char *msg, size_t len) {
    pthread_mutex_lock(&r->mu);
    if (r->count == READER_RING) {
        free(r->buf[r->head]);
        r->head = (r->head + 1) % READER_RING;
        r->count--;
        r->lost++;
    }
    int i = (r->head + r->count) % READER_RING;
    r->buf[i] = msg;
    r->len[i] = len;
    r->count++;
    __atomic_store_n(&r->pending, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&r->mu);
}

static void reader_fail(reader_t *r, int err) {
    pthread_mutex_lock(&r->mu);
    r->err = err;
    __atomic_store_n(&r->pending, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&r->mu);
}

/* each message as its frames, each [u32 length][bytes] */
static void *reader_main(void *arg) {
    reader_t *r = arg;
    zpollitem_t items[2] = {{r->sock, 0, 1 /* ZMQ_POLLIN */, 0}, {NULL, r->wake[0], 1, 0}};
    char *msg = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        items[0].revents = items[1].revents = 0;
        if (z_poll(items, 2, -1) < 0) {
            int e = z_errno();
            if (e == EINTR) continue;
            reader_fail(r, e);
            break;
        }
        if (items[1].revents) break; /* reader_stop */
        for (;;) {
            zmsg_t m;
            z_msg_init(&m);
            if (z_msg_recv(&m, r->sock, Z_DONTWAIT) < 0) {
                int e = z_errno();
                z_msg_close(&m);
                if (e == EINTR) continue;
                if (e == EAGAIN) break;
                reader_fail(r, e);
                goto done;
            }
            size_t n = z_msg_size(&m);
            if (len + 4 + n > cap) {
                size_t want = (len + 4 + n) * 2;
                char *grown = realloc(msg, want);
                if (grown == NULL) { z_msg_close(&m); reader_fail(r, ENOMEM); goto done; }
                msg = grown;
                cap = want;
            }
            uint32_t n32 = (uint32_t)n;
            memcpy(msg + len, &n32, 4);
            memcpy(msg + len + 4, z_msg_data(&m), n);
            len += 4 + n;
            int more = z_msg_more(&m);
            z_msg_close(&m);
            if (!more) {
                reader_push(r, msg, len);
                msg = NULL;
                len = cap = 0;
            }
        }
    }
done:
    free(msg);
    return NULL;
}

static void reader_free(reader_t *r) {
    if (r->running) {
        ssize_t w;
        do w = write(r->wake[1], "x", 1); while (w < 0 && errno == EINTR);
        pthread_join(r->th, NULL);
        r->running = 0;
    }
    if (r->wake[0] >= 0) { close(r->wake[0]); close(r->wake[1]); r->wake[0] = r->wake[1] = -1; }
    while (r->count) { free(r->buf[r->head]); r->head = (r->head + 1) % READER_RING; r->count--; }
}

static void reader_capsule_free(PyObject *cap) {
    reader_t *r = PyCapsule_GetPointer(cap, "headcast.subreader");
    if (r != NULL) {
        reader_free(r);
        Py_CLEAR(r->owner);
        pthread_mutex_destroy(&r->mu);
        free(r);
    }
}

static PyObject *py_sub_reader(PyObject *self, PyObject *args) {
    unsigned long long addr;
    PyObject *owner;
    if (!PyArg_ParseTuple(args, "OK", &owner, &addr)) return NULL;
    if (z_poll == NULL || z_msg_recv == NULL) Py_RETURN_NONE;
    reader_t *r = calloc(1, sizeof *r);
    if (r == NULL) return PyErr_NoMemory();
    r->sock = (void *)(uintptr_t)addr;
    if (pipe(r->wake) != 0) { free(r); Py_RETURN_NONE; }
    pthread_mutex_init(&r->mu, NULL);
    if (pthread_create(&r->th, NULL, reader_main, r) != 0) {
        close(r->wake[0]); close(r->wake[1]);
        pthread_mutex_destroy(&r->mu);
        free(r);
        Py_RETURN_NONE;
    }
    r->running = 1;
    Py_INCREF(owner);
    r->owner = owner;
    PyObject *cap = PyCapsule_New(r, "headcast.subreader", reader_capsule_free);
    if (cap == NULL) { reader_free(r); Py_CLEAR(r->owner); pthread_mutex_destroy(&r->mu); free(r); }
    return cap;
}

static PyObject *py_reader_take(PyObject *self, PyObject *cap) {
    reader_t *r = PyCapsule_GetPointer(cap, "headcast.subreader");
    if (r == NULL) return NULL;
    /* the common call finds nothing: no lock, no objects (a message pushed meanwhile is taken next time) */
    if (__atomic_load_n(&r->pending, __ATOMIC_ACQUIRE) == 0) Py_RETURN_NONE;
    char *bufs[READER_RING];
    size_t lens[READER_RING];
    int n = 0, err;
    unsigned long long lost;
    pthread_mutex_lock(&r->mu);
    while (r->count) {
        bufs[n] = r->buf[r->head];
        lens[n++] = r->len[r->head];
        r->head = (r->head + 1) % READER_RING;
        r->count--;
    }
    lost = r->lost;
    r->lost = 0;
    err = r->err;
    __atomic_store_n(&r->pending, err != 0, __ATOMIC_RELEASE); /* (a failed read stays news) */
    pthread_mutex_unlock(&r->mu);
    PyObject *out = PyList_New(n);
    for (int i = 0; i < n; i++) {
        PyObject *frames = out == NULL ? NULL : PyList_New(0);
        for (size_t at = 0; frames != NULL && at + 4 <= lens[i];) {
            uint32_t k;
            memcpy(&k, bufs[i] + at, 4);
            PyObject *b = PyBytes_FromStringAndSize(bufs[i] + at + 4, k);
            if (b == NULL || PyList_Append(frames, b) < 0) Py_CLEAR(frames);
            Py_XDECREF(b);
            at += 4 + k;
        }
        free(bufs[i]);
        if (out != NULL) {
            if (frames == NULL) Py_CLEAR(out);
            else PyList_SET_ITEM(out, i, frames);
        }
    }
    if (out == NULL) return NULL;
    return Py_BuildValue("(NKi)", out, lost, err);
}

static PyObject *py_reader_stop(PyObject *self, PyObject *cap) {
    reader_t *r = PyCapsule_GetPointer(cap, "headcast.subreader");
    if (r == NULL) return NULL;
    Py_BEGIN_ALLOW_THREADS
    reader_free(r);
    Py_END_ALLOW_THREADS
    Py_CLEAR(r->owner);
    Py_RETURN_NONE;
}

#else /* not Linux: the transport reads through pyzmq */
static PyObject *py_sub_reader(PyObject *self, PyObject *args) { Py_RETURN_NONE; }
static PyObject *py_reader_take(PyObject *self, PyObject *cap) {
    PyErr_SetString(PyExc_RuntimeError, "no reader here");
    return NULL;
}
static PyObject *py_reader_stop(PyObject *self, PyObject *cap) { Py_RETURN_NONE; }
static PyObject *py_zmq_bind(PyObject *self, PyObject *noargs) { Py_RETURN_NONE; }
static PyObject *py_zmq_drain(PyObject *self, PyObject *args) {
    PyErr_SetString(PyExc_RuntimeError, "zmq_bind() first");
    return NULL;
}
static PyObject *py_zmq_send2(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    PyErr_SetString(PyExc_RuntimeError, "zmq_bind() first");
    return NULL;
}
#endif

/* ------------------------------------------------------------------ module */

/* ------------------------------------------------------------------ the rig's frame */

static PyObject *EMPTY_TUPLE;
static PyObject *S_position, *S_orientation, *S_position_valid, *S_orientation_valid;

/* A stage Pose's fields when both are valid: 1 (pos, q read), 0 (not valid), -1 (unusual: the
 * Python path; no exception set unless one is pending) */
static int stage_pose(PyObject *pose, double *pos, double *q) {
    PyObject *v;
    int ok;
    if ((v = PyObject_GetAttr(pose, S_position_valid)) == NULL) return -1;
    ok = PyObject_IsTrue(v);
    Py_DECREF(v);
    if (ok <= 0) return ok;
    if ((v = PyObject_GetAttr(pose, S_orientation_valid)) == NULL) return -1;
    ok = PyObject_IsTrue(v);
    Py_DECREF(v);
    if (ok <= 0) return ok;
    PyObject *a = PyObject_GetAttr(pose, S_position);
    if (a == NULL) return -1;
    PyObject *b = PyObject_GetAttr(pose, S_orientation);
    if (b == NULL) { Py_DECREF(a); return -1; }
    ok = PyTuple_CheckExact(a) && PyTuple_GET_SIZE(a) == 3 && PyTuple_CheckExact(b) && PyTuple_GET_SIZE(b) == 4;
    for (int i = 0; ok && i < 3; i++) ok = getf(a, i, pos + i);
    for (int i = 0; ok && i < 4; i++) ok = getf(b, i, q + i);
    Py_DECREF(a);
    Py_DECREF(b);
    return ok ? 1 : -1;
}

/* pose_frame(trig, head, right, left, delta, PoseFrame, ORIGIN) -> PoseFrame, or None (the Python
 * path: app/sinks/netsync/mapping.py _pose_frame, which it does operation for operation: the rig's
 * world_head / world_position / world_orientation, then Unity's (x, y, -z), (-qx, -qy, qz, qw)) */
static PyObject *py_pose_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7 || T_Transform == NULL) Py_RETURN_NONE;
    PyObject *trig = args[0], *delta = args[4], *origin = args[6];
    PyTypeObject *cls = (PyTypeObject *)args[5];
    if (!PyType_Check(args[5]) || !PyTuple_CheckExact(trig) || PyTuple_GET_SIZE(trig) != 6) Py_RETURN_NONE;
    double t[6];
    for (int i = 0; i < 6; i++)
        if (!getf(trig, i, t + i)) Py_RETURN_NONE;
    const double ox = t[0], oz = t[1], c = t[2], s = t[3], cy = t[4], sy = t[5];
    PyObject *parts[3] = {NULL, NULL, NULL};
    int flags = F_PHYSICAL;
    for (int k = 0; k < 3; k++) {
        double p[3], q[4];
        int got = stage_pose(args[1 + k], p, q);
        if (got < 0) {
            for (int j = 0; j < k; j++) Py_DECREF(parts[j]);
            if (PyErr_Occurred()) return NULL;
            Py_RETURN_NONE;
        }
        if (got == 0) {
            Py_INCREF(origin);
            parts[k] = origin;
            continue;
        }
        double px = p[0], py = p[1], pz = p[2];
        double wx = ox + px * c + pz * s, wz = oz - px * s + pz * c;
        double qx = cy * q[0] + sy * q[2], qy = cy * q[1] + sy * q[3], qz = cy * q[2] - sy * q[0],
               qw = cy * q[3] - sy * q[1];
        parts[k] = transform(wx, py, -wz, -qx, -qy, qz, qw);
        if (parts[k] == NULL) {
            for (int j = 0; j < k; j++) Py_DECREF(parts[j]);
            return NULL;
        }
        if (k == 0)
            flags |= F_HEAD;
        else if (flags & F_HEAD)
            flags |= k == 1 ? F_RIGHT : F_LEFT;
    }
    PyObject *frame = cls->tp_alloc(cls, 0);
    PyObject *fl = frame == NULL ? NULL : PyLong_FromLong(flags);
    int bad = fl == NULL || PyObject_GenericSetAttr(frame, S_flags, fl) < 0 ||
              PyObject_GenericSetAttr(frame, S_head, parts[0]) < 0 ||
              PyObject_GenericSetAttr(frame, S_right, parts[1]) < 0 ||
              PyObject_GenericSetAttr(frame, S_left, parts[2]) < 0 ||
              PyObject_GenericSetAttr(frame, S_virtuals, EMPTY_TUPLE) < 0 ||
              PyObject_GenericSetAttr(frame, S_delta, delta) < 0 || PyObject_GenericSetAttr(frame, S_physical, origin) < 0;
    Py_XDECREF(fl);
    for (int j = 0; j < 3; j++) Py_DECREF(parts[j]);
    if (bad) {
        Py_XDECREF(frame);
        return NULL;
    }
    return frame;
}

static int table(PyObject *seq, double *out) {
    if (!PyTuple_Check(seq) || PyTuple_GET_SIZE(seq) != 1024) {
        PyErr_SetString(PyExc_ValueError, "a dequantisation table needs 1024 floats");
        return 0;
    }
    for (Py_ssize_t i = 0; i < 1024; i++) {
        out[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(seq, i));
        if (out[i] == -1.0 && PyErr_Occurred()) return 0;
    }
    return 1;
}

/* init(Transform, OriginDelta, PoseBody, ClientPose, RoomEntry, DQ10, DQ10_SQ, RAD, DEG):
 * what the extension shares with codec.py (so none of it is written twice) */
static PyObject *py_init(PyObject *self, PyObject *args) {
    PyObject *t[5], *dq, *dqsq;
    double rad, deg;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!OOdd", &PyType_Type, &t[0], &PyType_Type, &t[1], &PyType_Type, &t[2],
                          &PyType_Type, &t[3], &PyType_Type, &t[4], &dq, &dqsq, &rad, &deg))
        return NULL;
    for (int i = 0; i < 5; i++)
        if (!PyType_IsSubtype((PyTypeObject *)t[i], &PyTuple_Type) || ((PyTypeObject *)t[i])->tp_dictoffset) {
            PyErr_SetString(PyExc_TypeError, "init() takes NamedTuple classes (tuple subclasses without __dict__)");
            return NULL;
        }
    if (!table(dq, DQ10) || !table(dqsq, DQ10_SQ)) return NULL;
    PyTypeObject **slots[5] = {&T_Transform, &T_Delta, &T_Body, &T_Client, &T_Entry};
    for (int i = 0; i < 5; i++) { Py_INCREF(t[i]); Py_XSETREF(*slots[i], (PyTypeObject *)t[i]); }
    RAD = rad;
    DEG = deg;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"init", py_init, METH_VARARGS, "init(Transform, OriginDelta, PoseBody, ClientPose, RoomEntry, DQ10, DQ10_SQ, RAD, DEG)"},
    {"encode", py_encode, METH_VARARGS, "encode(prefix, frame, seq, protocol) -> prefix + body, or None (the Python path)"},
    {"decode_body", py_decode_body, METH_VARARGS, "decode_body(data, offset, family, size) -> (PoseBody, end) or None"},
    {"decode_room_entries", py_decode_room_entries, METH_VARARGS,
     "decode_room_entries(data, pos, count, family) -> (entries, end) or None"},
    {"decode_client_pose", py_decode_client_pose, METH_VARARGS, "decode_client_pose(data, expect or 0) -> ClientPose or None"},
    {"decode_room", py_decode_room, METH_VARARGS,
     "decode_room(data, protocol, topic, own clientNo or -1) -> (broadcastTime, entries, own body bytes) or None"},
    {"zmq_bind", py_zmq_bind, METH_NOARGS, "zmq_bind() -> the loaded libzmq's (major, minor, patch), or None"},
    {"zmq_drain", py_zmq_drain, METH_VARARGS, "zmq_drain(socket address, limit) -> (messages, status)"},
    {"zmq_send2", (PyCFunction)(void (*)(void))py_zmq_send2, METH_FASTCALL,
     "zmq_send2(socket address, first, second) -> 0, the first part's errno, or -errno of the second"},
    {"pose_frame", (PyCFunction)(void (*)(void))py_pose_frame, METH_FASTCALL,
     "pose_frame(trig, head, right, left, delta, PoseFrame, ORIGIN) -> PoseFrame, or None (the Python path)"},
    {"sub_reader", py_sub_reader, METH_VARARGS, "sub_reader(socket, its address) -> a reader thread owning it, or None"},
    {"reader_take", py_reader_take, METH_O, "reader_take(reader) -> (messages, lost, errno), or None: nothing"},
    {"reader_stop", py_reader_stop, METH_O, "reader_stop(reader): the thread ends; the socket is the caller's again"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_nscodec", "NetSync pose codec accelerator", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__nscodec(void) {
    const uint16_t one = 1;
    if (*(const unsigned char *)&one != 1) {
        PyErr_SetString(PyExc_ImportError, "_nscodec reads doubles as little-endian: not this host");
        return NULL;
    }
    const char *names[7] = {"flags", "head", "right", "left", "virtuals", "delta", "physical"};
    PyObject **slots[7] = {&S_flags, &S_head, &S_right, &S_left, &S_virtuals, &S_delta, &S_physical};
    for (int i = 0; i < 7; i++)
        if ((*slots[i] = PyUnicode_InternFromString(names[i])) == NULL) return NULL;
    const char *pose_names[4] = {"position", "orientation", "position_valid", "orientation_valid"};
    PyObject **pose_slots[4] = {&S_position, &S_orientation, &S_position_valid, &S_orientation_valid};
    for (int i = 0; i < 4; i++)
        if ((*pose_slots[i] = PyUnicode_InternFromString(pose_names[i])) == NULL) return NULL;
    if ((EMPTY_TUPLE = PyTuple_New(0)) == NULL) return NULL;
    return PyModule_Create(&module);
}
