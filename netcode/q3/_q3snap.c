/* Snapshot decoding in C for the Pump (included by _q3native.c after the Pump's struct: one
 * translation unit, one extension).
 *
 * serverparse.parse_server_message + delta.read_delta_playerstate / read_delta_entity for the one
 * message shape an in-game link sees 20 times a second: [nop]* snapshot [nop]* EOF, on the
 * protocol-71 netchan, decoded against this file's own ring of the last PACKET_BACKUP snapshots
 * and the gamestate's baselines. Everything runs without the GIL (pump_queue calls it at a tick's
 * reads). A message is "consumed" here only when the Python core, reading it, would do nothing but
 * store the snapshot: no server command, no gamestate, no reliable acknowledge that changes what
 * the next packet carries, a base this ring holds, no malformed byte. Anything else is left to the
 * core untouched (the ring is not changed), which then reads it exactly as before: its errors and
 * drops stay the Python path's own. The core takes the consumed snapshots at a hand-over
 * (Pump.snap_take) and looks older ones up here (Pump.snap_get): tests/q3/test_snapdecode.py
 * checks every snapshot field by field against the Python decoder.
 *
 * Values are kept as their 32-bit patterns (a float field as its float32 bits, an int field as
 * ioq3's int32), which is what the Python decoder's values come from. */

#include <stddef.h>

#define SNAP_BACKUP 32         /* serverparse.PACKET_BACKUP */
#define SNAP_MAX_ENT 256       /* serverparse.MAX_SNAPSHOT_ENTITIES */
#define SNAP_SCRATCH_ENT 520   /* the merge may overshoot 256 before its check (serverparse) */
#define SNAP_ENT_FIELDS 51     /* len(netfields.ENTITY_FIELDS) */
#define SNAP_PS_FIELDS 48      /* len(netfields.PLAYER_FIELDS) */
#define SNAP_GENTITIES 1024
#define SNAP_ENTITYNUM_NONE 1023
#define SNAP_MAX_OPS 4096
#define SNAP_LOG 24            /* consumed snapshots held between two hand-overs (< SNAP_BACKUP: all in the ring) */
#define SNAP_MSGLEN (16384 + 8)
#define SNAP_MAX_CMDS 64       /* server commands before a snapshot (snap_parse_cmds) */

typedef struct {
    uint32_t f[SNAP_ENT_FIELDS];
} SnapEnt;

typedef struct {
    int64_t message_num;       /* -1: empty slot */
    int64_t delta_num;
    int32_t server_time;
    int flags, arealen, nent;
    uint8_t areamask[32];
    uint32_t ps[SNAP_PS_FIELDS];
    int32_t arr[4][16];
    uint16_t num[SNAP_SCRATCH_ENT];
    SnapEnt ent[SNAP_SCRATCH_ENT];
} CSnap;

typedef struct {
    int64_t seq;
    double at;
    double lag;                /* read this long after `at` (the round trip's end; pump_step) */
    Py_ssize_t nbytes;
} SnapLogEntry;

typedef struct SnapDec {
    int ent_w[SNAP_ENT_FIELDS], ps_w[SNAP_PS_FIELDS];
    int ix_delta[3], ix_command_time;
    int enabled;               /* consume (snap_enable): the core is in game and attached */
    int64_t rel_ack, rel_seq;  /* the core's reliable acknowledge and sequence (an ack past it: the core's) */
    double absorb;             /* the longest consumed snapshots wait for the core */
    uint8_t *rtext;            /* legacy netchan: the core's 64 reliable command texts, sanitized */
    Py_ssize_t roff[65];       /* slot i is rtext[roff[i] .. roff[i + 1]) (>= 1 byte: a NUL for "") */
    uint8_t clear[SNAP_MSGLEN + PAD];   /* a legacy message unscrambled */
    int cmds_ok, ncmd;         /* snap_parse_cmds: server commands before the snapshot are read too */
    int64_t cmd_seq[SNAP_MAX_CMDS];
    Py_ssize_t cmd_off[SNAP_MAX_CMDS + 1];
    uint8_t cmd_text[SNAP_MAX_CMDS * MAX_STRING_CHARS];
    uint8_t has_base[SNAP_GENTITIES];
    SnapEnt base[SNAP_GENTITIES];
    CSnap ring[SNAP_BACKUP];
    CSnap scratch;
    uint8_t msg[SNAP_MSGLEN + PAD];
    int nlog;
    SnapLogEntry log[SNAP_LOG];
} SnapDec;

typedef struct {
    const uint8_t *buf;
    int64_t bit, end;
} SR;

/* rd_bits without Python: 0, or -1 (the Python path reads the message and says why). */
static int sr_bits(SR *r, int n, int is_signed, int64_t *out)
{
    int64_t bit = r->bit, end = r->end;
    int raw = n & 7;
    uint64_t value = 0;
    if (raw) {
        if (bit + raw > end)
            return -1;
        const uint8_t *p = r->buf + (bit >> 3);
        value = (((unsigned)p[0] | ((unsigned)p[1] << 8) | ((unsigned)p[2] << 16)) >> (bit & 7)) & ((1u << raw) - 1);
        bit += raw;
    }
    int shift = raw;
    for (int i = n >> 3; i > 0; i--) {
        const uint8_t *p = r->buf + (bit >> 3);
        unsigned idx = (((unsigned)p[0] | ((unsigned)p[1] << 8) | ((unsigned)p[2] << 16)) >> (bit & 7))
                       & ((1u << DECODE_BITS) - 1);
        unsigned symbol = dec_symbol[idx];
        bit += dec_length[idx];
        if (bit > end || symbol == NYT)
            return -1;
        value |= (uint64_t)symbol << shift;
        shift += 8;
    }
    r->bit = bit;
    int64_t v = (int64_t)value;
    if (is_signed) {
        int width = n - raw;
        if (width > 0 && width < 32 && (value >> (width - 1)) & 1)
            v = (int64_t)(value | (~0ULL << width));
    }
    if (v >= 0x80000000LL)
        v -= 0x100000000LL;
    *out = v;
    return 0;
}

static inline int sr_flag(SR *r, unsigned *out)
{
    if (r->bit >= r->end)
        return -1;
    const uint8_t *p = r->buf + (r->bit >> 3);
    *out = (p[0] >> (r->bit & 7)) & 1;
    r->bit++;
    return 0;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* read_netfields over `vals` (already the base's): 0 or -1. */
static int sr_netfields(SR *r, const int *widths, int nfields, uint32_t *vals, int zero_flags)
{
    int64_t lc, v;
    if (sr_bits(r, 8, 0, &lc) < 0 || lc > nfields)
        return -1;
    for (int i = 0; i < lc; i++) {
        unsigned changed, flag;
        if (sr_flag(r, &changed) < 0)
            return -1;
        if (!changed)
            continue;
        int width = widths[i];
        if (zero_flags) {
            if (sr_flag(r, &flag) < 0)
                return -1;
            if (!flag) {
                vals[i] = 0;
                continue;
            }
        }
        if (width == 0) {
            if (sr_flag(r, &flag) < 0)
                return -1;
            if (flag) {
                if (sr_bits(r, 32, 0, &v) < 0)
                    return -1;
                vals[i] = (uint32_t)v;
            } else {
                if (sr_bits(r, FLOAT_INT_BITS, 0, &v) < 0)
                    return -1;
                vals[i] = f32_bits((float)(v - FLOAT_INT_BIAS));
            }
        } else {
            int n = width < 0 ? -width : width;
            if (sr_bits(r, n, width < 0, &v) < 0)
                return -1;
            vals[i] = (uint32_t)v;
        }
    }
    return 0;
}

static const CSnap *snap_find(const SnapDec *d, int64_t num)
{
    if (num < 0)
        return NULL;
    const CSnap *s = &d->ring[num % SNAP_BACKUP];
    return s->message_num == num ? s : NULL;
}

/* serverparse._snapshot into d->scratch against d's ring: 1 decoded with a base held here, 0 the
 * core's (a base only it may hold, or a malformed byte). */
static int sr_snapshot(SnapDec *d, SR *r, int64_t message_num)
{
    CSnap *s = &d->scratch;
    int64_t v, back, flags, n;
    if (sr_bits(r, 32, 0, &v) < 0 || sr_bits(r, 8, 0, &back) < 0 || sr_bits(r, 8, 0, &flags) < 0)
        return 0;
    const CSnap *base = NULL;
    s->message_num = message_num;
    s->server_time = (int32_t)v;
    s->flags = (int)flags;
    if (back == 0) {
        s->delta_num = -1;
    } else {
        s->delta_num = message_num - back;
        base = snap_find(d, s->delta_num);
        if (base == NULL || back >= SNAP_BACKUP)
            return 0;   /* invalid, or a base in the core's ring only: the core decides */
    }
    if (sr_bits(r, 8, 0, &n) < 0 || n > 32)
        return 0;
    s->arealen = (int)n;
    for (int i = 0; i < n; i++) {
        if (sr_bits(r, 8, 0, &v) < 0)
            return 0;
        s->areamask[i] = (uint8_t)v;
    }
    /* playerState */
    if (base != NULL) {
        memcpy(s->ps, base->ps, sizeof s->ps);
        memcpy(s->arr, base->arr, sizeof s->arr);
    } else {
        memset(s->ps, 0, sizeof s->ps);
        memset(s->arr, 0, sizeof s->arr);
    }
    if (sr_netfields(r, d->ps_w, SNAP_PS_FIELDS, s->ps, 0) < 0)
        return 0;
    unsigned any, changed;
    if (sr_flag(r, &any) < 0)
        return 0;
    for (int k = 0; any && k < 4; k++) {
        if (sr_flag(r, &changed) < 0)
            return 0;
        if (!changed)
            continue;
        int64_t mask;
        if (sr_bits(r, 16, 0, &mask) < 0)
            return 0;
        for (int i = 0; i < 16; i++) {
            if (!(mask & (1 << i)))
                continue;
            if (sr_bits(r, k < 3 ? 16 : 32, 0, &v) < 0)
                return 0;
            if (k < 3 && v >= 0x8000)
                v -= 0x10000;
            s->arr[k][i] = (int32_t)v;
        }
    }
    /* packet entities: serverparse._packet_entities */
    int oi = 0, on = base != NULL ? base->nent : 0, cnt = 0;
    int64_t last = -1;
    for (;;) {
        int64_t num;
        if (sr_bits(r, 10, 0, &num) < 0)
            return 0;
        if (num == SNAP_ENTITYNUM_NONE)
            break;
        if (num <= last)
            return 0;
        last = num;
        while (oi < on && base->num[oi] < num) {
            s->num[cnt] = base->num[oi];
            s->ent[cnt++] = base->ent[oi++];
        }
        const uint32_t *frm = NULL;
        if (oi < on && base->num[oi] == num)
            frm = base->ent[oi++].f;
        else if (d->has_base[num])
            frm = d->base[num].f;
        unsigned removed, delta;
        if (sr_flag(r, &removed) < 0)
            return 0;
        if (!removed) {
            if (sr_flag(r, &delta) < 0)
                return 0;
            SnapEnt *e = &s->ent[cnt];
            if (frm != NULL)
                memcpy(e->f, frm, sizeof e->f);
            else
                memset(e->f, 0, sizeof e->f);
            if (delta && sr_netfields(r, d->ent_w, SNAP_ENT_FIELDS, e->f, 1) < 0)
                return 0;
            s->num[cnt++] = (uint16_t)num;
        }
        if (cnt > SNAP_MAX_ENT)
            return 0;
    }
    while (oi < on) {
        if (cnt >= SNAP_SCRATCH_ENT)
            return 0;
        s->num[cnt] = base->num[oi];
        s->ent[cnt++] = base->ent[oi++];
    }
    if (cnt > SNAP_MAX_ENT)
        return 0;
    s->nent = cnt;
    return 1;
}

static void snap_store(SnapDec *d, const CSnap *s)
{
    CSnap *slot = &d->ring[s->message_num % SNAP_BACKUP];
    size_t head = offsetof(CSnap, num);
    memcpy(slot, s, head);
    memcpy(slot->num, s->num, sizeof s->num[0] * (size_t)s->nent);
    memcpy(slot->ent, s->ent, sizeof s->ent[0] * (size_t)s->nent);
}

/* The in-sequence protocol-71 message `seq` (body after the 8-byte header, Huffman-coded): 1 when
 * consumed here (stored in the ring and logged), 0 when it is the core's. No GIL needed. */
static int snap_consume(SnapDec *d, const uint8_t *body, Py_ssize_t len, int64_t seq, double now, Py_ssize_t nbytes)
{
    if (!d->enabled || d->nlog == SNAP_LOG || len > SNAP_MSGLEN || seq < 0 || seq > 0x7FFFFFFF)
        return 0;   /* a netchan sequence is 31 bits: snap_store indexes ring[seq % SNAP_BACKUP] */
    memcpy(d->msg, body, (size_t)len);
    memset(d->msg + len, 0, PAD);
    SR r = {d->msg, 0, (int64_t)len * 8};
    int64_t ack, op;
    if (sr_bits(&r, 32, 0, &ack) < 0)
        return 0;
    /* client._on_message: an acknowledge the core would take changes the reliable commands in flight */
    if (d->rel_seq - 64 <= ack && ack <= d->rel_seq && ack > d->rel_ack)
        return 0;
    int snaps = 0;
    d->ncmd = 0;
    d->cmd_off[0] = 0;
    for (int i = 0; i < SNAP_MAX_OPS; i++) {
        if (sr_bits(&r, 8, 0, &op) < 0)
            return 0;
        if (op == 5 && d->cmds_ok && !snaps) {   /* svc_serverCommand: seq, then msg.read_string's rules */
            int64_t cs, c;
            if (d->ncmd == SNAP_MAX_CMDS || sr_bits(&r, 32, 0, &cs) < 0)
                return 0;
            Py_ssize_t at = d->cmd_off[d->ncmd], n = 0;
            for (;;) {
                if (sr_bits(&r, 8, 0, &c) < 0)
                    return 0;
                if (c == 0 || n >= MAX_STRING_CHARS - 1)
                    break;   /* like ioq3: the char after a full buffer is consumed and the read stops */
                d->cmd_text[at + n++] = (c > 127 || c == '%') ? '.' : (uint8_t)c;
            }
            d->cmd_seq[d->ncmd] = cs;
            d->cmd_off[++d->ncmd] = at + n;
            continue;
        }
        if (op == 8) {   /* svc_EOF */
            if (snaps != 1)
                return 0;
            snap_store(d, &d->scratch);
            d->log[d->nlog].seq = seq;
            d->log[d->nlog].at = now;
            d->log[d->nlog].lag = 0.0;
            d->log[d->nlog].nbytes = nbytes;
            d->nlog++;
            return 1;
        }
        if (op == 1)     /* svc_nop */
            continue;
        if (op != 7 || snaps || !sr_snapshot(d, &r, seq))
            return 0;
        snaps = 1;
    }
    return 0;
}

/* ---- the Python side (GIL held, pump not running) ---- */

static SnapDec *snap_dec(Pump *self)
{
    if (self->snap == NULL) {
        if (check_ready() < 0)
            return NULL;
        SnapDec *d = PyMem_RawCalloc(1, sizeof(SnapDec));
        if (d == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        PyObject *tables[2] = {entity_widths, player_widths};
        int *outs[2] = {d->ent_w, d->ps_w}, ns[2] = {SNAP_ENT_FIELDS, SNAP_PS_FIELDS};
        for (int t = 0; t < 2; t++) {
            PyObject *fast = PySequence_Tuple(tables[t]);
            if (fast == NULL || PyTuple_GET_SIZE(fast) != ns[t]) {
                if (fast != NULL)
                    PyErr_SetString(PyExc_RuntimeError, "netField tables do not match _q3snap.c");
                Py_XDECREF(fast);
                PyMem_RawFree(d);
                return NULL;
            }
            for (int i = 0; i < ns[t]; i++) {
                long w = PyLong_AsLong(PyTuple_GET_ITEM(fast, i));
                if ((w == -1 && PyErr_Occurred()) || w < -31 || w > 32) {
                    if (!PyErr_Occurred())
                        PyErr_SetString(PyExc_RuntimeError, "bad netField width");
                    Py_DECREF(fast);
                    PyMem_RawFree(d);
                    return NULL;
                }
                outs[t][i] = (int)w;
            }
            Py_DECREF(fast);
        }
        for (int i = 0; i < SNAP_BACKUP; i++)
            d->ring[i].message_num = -1;
        self->snap = d;
    }
    return self->snap;
}

/* A value of a netField from Python (float: its float32 bits; int: int32). */
static int snap_from_py(PyObject *o, int width, uint32_t *out)
{
    if (width == 0) {
        double x = PyFloat_AsDouble(o);
        if (x == -1.0 && PyErr_Occurred())
            return -1;
        unsigned char le[4];
        if (PyFloat_Pack4(x, (char *)le, 1) < 0)
            return -1;
        *out = (uint32_t)le[0] | (uint32_t)le[1] << 8 | (uint32_t)le[2] << 16 | (uint32_t)le[3] << 24;
        return 0;
    }
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (v < INT32_MIN || v > (long long)UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "a netField value out of the 32-bit range");
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

static PyObject *snap_to_py(uint32_t u, int width)
{
    if (width == 0) {
        unsigned char le[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
                               (unsigned char)(u >> 24)};
        double x = PyFloat_Unpack4((const char *)le, 1);
        if (x == -1.0 && PyErr_Occurred())
            return NULL;
        return PyFloat_FromDouble(x);
    }
    return PyLong_FromLong((long)(int32_t)u);
}

static int snap_values_from_py(PyObject *values, const int *widths, int n, uint32_t *out)
{
    PyObject *fast = PySequence_Tuple(values);
    if (fast == NULL)
        return -1;
    if (PyTuple_GET_SIZE(fast) != n) {
        PyErr_Format(PyExc_ValueError, "%d field values expected, got %zd", n, PyTuple_GET_SIZE(fast));
        Py_DECREF(fast);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (snap_from_py(PyTuple_GET_ITEM(fast, i), widths[i], &out[i]) < 0) {
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return 0;
}

static PyObject *snap_values_to_py(const uint32_t *vals, const int *widths, int n)
{
    PyObject *t = PyTuple_New(n);
    if (t == NULL)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *o = snap_to_py(vals[i], widths[i]);
        if (o == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, o);
    }
    return t;
}

static int snap_not_running(Pump *self)
{
    if (self->running) {
        PyErr_SetString(PyExc_RuntimeError, "Pump.snap_* while it runs");
        return -1;
    }
    return 0;
}

/* snap_reset(baselines: {number: entity field values}, delta_angles_ix, command_time_ix): a new
 * gamestate: the ring emptied, the baselines taken, consumption off until snap_enable. */
static PyObject *Pump_snap_reset(Pump *self, PyObject *args)
{
    PyObject *baselines;
    int ix[4];
    if (!PyArg_ParseTuple(args, "O!(iii)i:snap_reset", &PyDict_Type, &baselines, &ix[0], &ix[1], &ix[2], &ix[3]))
        return NULL;
    SnapDec *d;
    if (snap_not_running(self) < 0 || (d = snap_dec(self)) == NULL)
        return NULL;
    for (int i = 0; i < 4; i++) {
        if (ix[i] < 0 || ix[i] >= SNAP_PS_FIELDS) {
            PyErr_SetString(PyExc_ValueError, "snap_reset: playerState field index out of range");
            return NULL;
        }
    }
    d->enabled = 0;
    d->nlog = 0;
    for (int i = 0; i < SNAP_BACKUP; i++)
        d->ring[i].message_num = -1;
    memset(d->has_base, 0, sizeof d->has_base);
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(baselines, &pos, &key, &value)) {
        long num = PyLong_AsLong(key);
        if (num == -1 && PyErr_Occurred())
            goto fail;
        if (num < 0 || num >= SNAP_GENTITIES) {
            PyErr_Format(PyExc_ValueError, "baseline number %ld out of range", num);
            goto fail;
        }
        if (snap_values_from_py(value, d->ent_w, SNAP_ENT_FIELDS, d->base[num].f) < 0)
            goto fail;
        d->has_base[num] = 1;
    }
    memcpy(d->ix_delta, ix, sizeof d->ix_delta);
    d->ix_command_time = ix[3];
    Py_RETURN_NONE;
fail:
    memset(d->has_base, 0, sizeof d->has_base);   /* no half-taken gamestate (consumption stays off) */
    return NULL;
}

/* snap_enable(on, reliable_ack, reliable_seq, absorb): consume in-game snapshots from the next
 * read on (the core is ACTIVE and its ring is reachable through snap_get), handing them over at
 * most `absorb` seconds after the first arrived. */
static PyObject *Pump_snap_enable(Pump *self, PyObject *args)
{
    int on;
    long long ack, seq;
    double absorb;
    PyObject *ring = Py_None;
    if (!PyArg_ParseTuple(args, "pLLd|O:snap_enable", &on, &ack, &seq, &absorb, &ring))
        return NULL;
    SnapDec *d;
    if (snap_not_running(self) < 0 || (d = snap_dec(self)) == NULL)
        return NULL;
    if (!(absorb >= 0.0 && absorb <= 10.0)) {
        PyErr_SetString(PyExc_ValueError, "snap_enable: absorb must be within 0..10 s");
        return NULL;
    }
    if (ring != Py_None) {   /* the legacy netchan's unscrambling texts (netchan._unscramble) */
        PyObject *fast = PySequence_Tuple(ring);
        if (fast == NULL)
            return NULL;
        if (PyTuple_GET_SIZE(fast) != RING) {
            PyErr_Format(PyExc_ValueError, "snap_enable: a %d-slot command ring, not %zd", RING, PyTuple_GET_SIZE(fast));
            Py_DECREF(fast);
            return NULL;
        }
        Py_ssize_t total = 0;
        for (int i = 0; i < RING; i++) {
            Py_ssize_t n = text_size(PyTuple_GET_ITEM(fast, i));
            if (n < 0) {
                Py_DECREF(fast);
                return NULL;
            }
            total += n + 1;
        }
        uint8_t *text = PyMem_RawMalloc((size_t)total + 1);
        if (text == NULL) {
            Py_DECREF(fast);
            return PyErr_NoMemory();
        }
        Py_ssize_t at = 0;
        for (int i = 0; i < RING; i++) {
            Py_ssize_t m = sanitize_into(PyTuple_GET_ITEM(fast, i), text + at, total - at);
            if (m < 0) {
                PyMem_RawFree(text);
                Py_DECREF(fast);
                return NULL;
            }
            if (m == 0)
                text[at + m++] = 0;   /* xor_scramble's rule: an empty text keys with one NUL */
            d->roff[i] = at;
            at += m;
        }
        d->roff[RING] = at;
        Py_DECREF(fast);
        PyMem_RawFree(d->rtext);
        d->rtext = text;
    }
    d->enabled = on;
    d->rel_ack = ack;
    d->rel_seq = seq;
    d->absorb = absorb;
    Py_RETURN_NONE;
}

/* snap_put(message_num, server_time, delta_num, flags, areamask, ps_values, stats, persistant,
 * ammo, powerups, {number: entity values}): a snapshot the core decoded, as a base for the next. */
static PyObject *Pump_snap_put(Pump *self, PyObject *args)
{
    long long num, delta_num;
    int server_time, flags;
    Py_buffer area;
    PyObject *ps, *arrays[4], *ents;
    if (!PyArg_ParseTuple(args, "LiLiy*OOOOOO!:snap_put", &num, &server_time, &delta_num, &flags, &area, &ps,
                          &arrays[0], &arrays[1], &arrays[2], &arrays[3], &PyDict_Type, &ents))
        return NULL;
    SnapDec *d;
    PyObject *out = NULL, *items = NULL;
    if (snap_not_running(self) < 0 || (d = snap_dec(self)) == NULL)
        goto done;
    if (num < 0 || area.len > 32 || PyDict_GET_SIZE(ents) > SNAP_MAX_ENT) {
        PyErr_SetString(PyExc_ValueError, "snap_put: not a snapshot this ring can hold");
        goto done;
    }
    CSnap *s = &d->scratch;
    s->message_num = num;
    s->delta_num = delta_num;
    s->server_time = server_time;
    s->flags = flags;
    s->arealen = (int)area.len;
    memcpy(s->areamask, area.buf, (size_t)area.len);
    if (snap_values_from_py(ps, d->ps_w, SNAP_PS_FIELDS, s->ps) < 0)
        goto done;
    for (int k = 0; k < 4; k++) {
        uint32_t tmp[16];
        int w[16];
        for (int i = 0; i < 16; i++)
            w[i] = 32;
        if (snap_values_from_py(arrays[k], w, 16, tmp) < 0)
            goto done;
        for (int i = 0; i < 16; i++)
            s->arr[k][i] = (int32_t)tmp[i];
    }
    items = PyDict_Items(ents);
    if (items == NULL || PyList_Sort(items) < 0)
        goto done;
    int cnt = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *pair = PyList_GET_ITEM(items, i);
        long n = PyLong_AsLong(PyTuple_GET_ITEM(pair, 0));
        if (n == -1 && PyErr_Occurred())
            goto done;
        if (n < 0 || n >= SNAP_ENTITYNUM_NONE) {
            PyErr_Format(PyExc_ValueError, "entity number %ld out of range", n);
            goto done;
        }
        if (snap_values_from_py(PyTuple_GET_ITEM(pair, 1), d->ent_w, SNAP_ENT_FIELDS, s->ent[cnt].f) < 0)
            goto done;
        s->num[cnt++] = (uint16_t)n;
    }
    s->nent = cnt;
    snap_store(d, s);
    out = Py_None;
    Py_INCREF(out);
done:
    Py_XDECREF(items);
    PyBuffer_Release(&area);
    return out;
}

static PyObject *snap_header(const SnapDec *d, const CSnap *s)
{
    PyObject *arrs[4] = {NULL, NULL, NULL, NULL}, *ps = NULL, *out = NULL;
    ps = snap_values_to_py(s->ps, d->ps_w, SNAP_PS_FIELDS);
    if (ps == NULL)
        goto done;
    for (int k = 0; k < 4; k++) {
        arrs[k] = PyTuple_New(16);
        if (arrs[k] == NULL)
            goto done;
        for (int i = 0; i < 16; i++) {
            PyObject *o = PyLong_FromLong((long)s->arr[k][i]);
            if (o == NULL)
                goto done;
            PyTuple_SET_ITEM(arrs[k], i, o);
        }
    }
    out = Py_BuildValue("(LiLiy#(OOOOO)i)", (long long)s->message_num, (int)s->server_time,
                        (long long)s->delta_num, s->flags, (const char *)s->areamask, (Py_ssize_t)s->arealen, ps,
                        arrs[0], arrs[1], arrs[2], arrs[3], s->nent);
done:
    Py_XDECREF(ps);
    for (int k = 0; k < 4; k++)
        Py_XDECREF(arrs[k]);
    return out;
}

/* snap_take(): the snapshots consumed since the last take, oldest first: (sequence, arrival,
 * datagram bytes, (message_num, server_time, delta_num, flags, areamask, (ps values, stats,
 * persistant, ammo, powerups), entity count), read lag: how long after the arrival's tick time
 * it was read, for the round trip). */
static PyObject *Pump_snap_take(Pump *self, PyObject *unused)
{
    if (snap_not_running(self) < 0)
        return NULL;
    SnapDec *d = self->snap;
    if (d == NULL || d->nlog == 0)
        return PyTuple_New(0);
    PyObject *out = PyTuple_New(d->nlog);
    if (out == NULL)
        return NULL;
    for (int i = 0; i < d->nlog; i++) {
        const CSnap *s = snap_find(d, d->log[i].seq);
        PyObject *h = s != NULL ? snap_header(d, s) : (Py_INCREF(Py_None), Py_None);
        PyObject *e = h == NULL ? NULL : Py_BuildValue("(LdnNd)", (long long)d->log[i].seq, d->log[i].at,
                                                       d->log[i].nbytes, h, d->log[i].lag);
        if (e == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i, e);
    }
    d->nlog = 0;
    return out;
}

/* snap_get(message_num): None, or snap_take's snapshot tuple with a last item: {number: entity
 * values} (what serverparse.Snapshot needs). */
static PyObject *Pump_snap_get(Pump *self, PyObject *o_num)
{
    if (snap_not_running(self) < 0)
        return NULL;
    long long num = PyLong_AsLongLong(o_num);
    if (num == -1 && PyErr_Occurred())
        return NULL;
    const SnapDec *d = self->snap;
    const CSnap *s = d != NULL ? snap_find(d, num) : NULL;
    if (s == NULL)
        Py_RETURN_NONE;
    PyObject *ents = PyDict_New(), *h = NULL, *out = NULL;
    if (ents == NULL)
        return NULL;
    for (int i = 0; i < s->nent; i++) {
        PyObject *k = PyLong_FromLong(s->num[i]), *v = snap_values_to_py(s->ent[i].f, d->ent_w, SNAP_ENT_FIELDS);
        int bad = k == NULL || v == NULL || PyDict_SetItem(ents, k, v) < 0;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (bad)
            goto done;
    }
    h = snap_header(d, s);
    if (h != NULL)
        out = Py_BuildValue("(NO)", h, ents), h = NULL;
done:
    Py_XDECREF(h);
    Py_DECREF(ents);
    return out;
}

/* snap_parse(payload, sequence): the test hook: snap_consume on one message body (after the
 * netchan header) without the pump; True when consumed (snap_take / snap_get then have it). */
static PyObject *Pump_snap_parse(Pump *self, PyObject *args)
{
    Py_buffer body;
    long long seq;
    if (!PyArg_ParseTuple(args, "y*L:snap_parse", &body, &seq))
        return NULL;
    if (seq < 0 || seq > 0x7FFFFFFF) {
        PyBuffer_Release(&body);
        PyErr_SetString(PyExc_ValueError, "snap_parse: the sequence must be within 0..2**31-1");
        return NULL;
    }
    SnapDec *d;
    PyObject *out = NULL;
    if (snap_not_running(self) >= 0 && (d = snap_dec(self)) != NULL)
        out = PyBool_FromLong(snap_consume(d, body.buf, body.len, seq, 0.0, body.len + 8));
    PyBuffer_Release(&body);
    return out;
}

/* pump_queue's first look at a datagram read at `now`: 1 when it was an in-game snapshot message
 * consumed here, the pump's state then being what the core's configure() would give after reading
 * it (the acknowledge, the keys, the snapshot's delta_angles and server time, delta moves). */
static int pump_snap(Pump *self, const uint8_t *p, Py_ssize_t n, double now)
{
    SnapDec *d = self->snap;
    int header = self->legacy ? 4 : 8;
    if (!d->enabled || self->qn || n < header || (self->legacy && d->rtext == NULL))
        return 0;
    uint32_t raw = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    if (raw & 0x80000000u)
        return 0;   /* out-of-band or a fragment */
    int64_t seq = raw;
    if (!self->legacy) {
        uint32_t sum = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;
        if (sum != (uint32_t)(self->challenge ^ ((uint64_t)seq * self->challenge)))
            return 0;
    }
    if (seq <= self->in_seq || n - header > SV_MAX_MSGLEN)
        return 0;   /* the core drops it (netchan: "oversized message") */
    const uint8_t *body = p + header;
    Py_ssize_t len = n - header;
    if (self->legacy) {   /* netchan._unscramble, as native_legacy_unscramble does it */
        if (len > SNAP_MSGLEN)
            return 0;
        memcpy(d->clear, body, (size_t)len);
        if (len > SV_ENCODE_START) {
            int64_t ack;
            lenient_longs(body, len, 0, 1, &ack);
            int slot = (int)(ack & (RING - 1));
            xor_chars(d->clear, SV_ENCODE_START, len, self->challenge ^ (uint64_t)seq, d->rtext + d->roff[slot],
                      d->roff[slot + 1] - d->roff[slot]);
        }
        body = d->clear;
    }
    if (!snap_consume(d, body, len, seq, now, n))
        return 0;
    d->log[d->nlog - 1].lag = self->read_lag;
    const CSnap *s = &d->scratch;
    self->in_seq = seq;
    self->mseq = (uint64_t)seq;
    self->key = self->feed ^ self->mseq ^ (uint64_t)self->hash;
    self->last_packet = now;
    for (int i = 0; i < 3; i++)
        self->delta[i] = (int64_t)(int32_t)s->ps[d->ix_delta[i]];
    self->has_snap = 1;
    self->snap_server_time = s->server_time;
    self->snap_time = now;
    self->nodelta = 0;
    return 1;
}

/* Consumed snapshots waiting long enough (or a full log): the core's turn. */
static int pump_snap_due(Pump *self, double now)
{
    const SnapDec *d = self->snap;
    return d != NULL && d->nlog && (d->nlog == SNAP_LOG || now - d->log[0].at >= d->absorb);
}

/* snap_parse_cmds(payload, sequence): snap_parse for a core reading its own datagrams
 * (Q3ClientCore.use_native_snapshots): server commands before the snapshot are read here too.
 * None when the message is the Python parser's, else the commands' (seq, text) in order (the
 * snapshot then in snap_take / snap_get). */
static PyObject *Pump_snap_parse_cmds(Pump *self, PyObject *args)
{
    Py_buffer body;
    long long seq;
    if (!PyArg_ParseTuple(args, "y*L:snap_parse_cmds", &body, &seq))
        return NULL;
    if (seq < 0 || seq > 0x7FFFFFFF) {
        PyBuffer_Release(&body);
        PyErr_SetString(PyExc_ValueError, "snap_parse_cmds: the sequence must be within 0..2**31-1");
        return NULL;
    }
    SnapDec *d;
    PyObject *out = NULL;
    if (snap_not_running(self) < 0 || (d = snap_dec(self)) == NULL)
        goto done;
    d->cmds_ok = 1;
    int consumed = snap_consume(d, body.buf, body.len, seq, 0.0, body.len + 8);
    d->cmds_ok = 0;
    if (!consumed) {
        out = Py_None;
        Py_INCREF(out);
        goto done;
    }
    out = PyTuple_New(d->ncmd);
    for (int i = 0; out != NULL && i < d->ncmd; i++) {
        PyObject *e = Py_BuildValue("(LN)", (long long)d->cmd_seq[i],
                                    PyUnicode_DecodeASCII((const char *)d->cmd_text + d->cmd_off[i],
                                                          d->cmd_off[i + 1] - d->cmd_off[i], NULL));
        if (e == NULL)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, e);
    }
done:
    PyBuffer_Release(&body);
    return out;
}
