/* _q3native: the Quake 3 codec hot paths in C (headcast.netcode.q3.native loads it).
 *
 * Every function here has a pure-Python reference in the package (msg.py, usercmd.py,
 * clientmsg.py, netchan.py, delta.py) and must give the same bytes, values, error types and
 * error messages; tests run both on random and garbage input. The Huffman code is not written
 * here: init() receives huffman.STATIC_CODES and MsgError from Python and builds its tables.
 *
 * The readers take network bytes: every read is bounds-checked against the message end, the
 * buffer is copied with zero padding so an 11-bit decode window at the very end stays inside
 * it, and nothing allocates in proportion to a count read from the wire beyond what Python
 * would (field counts are checked against the table first).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define NYT 256
#define DECODE_BITS 11
#define PAD 8                /* zero bytes after a reader's copy: decode windows read 3 */
#define FLOAT_INT_BITS 13
#define FLOAT_INT_BIAS (1 << (FLOAT_INT_BITS - 1))
#define MAX_STRING_CHARS 1024
#define BIG_INFO_STRING 8192
#define MAX_PACKET_USERCMDS 32
#define CLC_MOVE 2
#define CLC_MOVE_NO_DELTA 3
#define CLC_CLIENT_COMMAND 4
#define CLC_EOF 5

static PyObject *MsgError;   /* headcast.netcode.q3.errors.MsgError, from init() */
static PyObject *entity_widths, *player_widths;   /* the netField tables' widths, from init() */
static int tables_ready;
static uint16_t enc_code[256];
static uint8_t enc_len[256];
static uint16_t dec_symbol[1 << DECODE_BITS];
static uint8_t dec_length[1 << DECODE_BITS];

static int check_ready(void)
{
    if (!tables_ready) {
        PyErr_SetString(PyExc_RuntimeError, "_q3native.init() has not been called");
        return -1;
    }
    return 0;
}

/* init(MsgError, STATIC_CODES, entity_widths, player_widths): STATIC_CODES holds `(code << 4) |
 * length` for bytes 0..255, then NYT; the widths are the netField tables' (netfields.py). */
static PyObject *native_init(PyObject *self, PyObject *args)
{
    PyObject *err, *codes, *fast, *ew, *pw;
    if (!PyArg_ParseTuple(args, "OOO!O!:init", &err, &codes, &PyTuple_Type, &ew, &PyTuple_Type, &pw))
        return NULL;
    if (!PyType_Check(err) || !PyType_IsSubtype((PyTypeObject *)err, (PyTypeObject *)PyExc_Exception)) {
        PyErr_SetString(PyExc_TypeError, "init: the first argument must be an exception class");
        return NULL;
    }
    fast = PySequence_Tuple(codes);
    if (fast == NULL)
        return NULL;
    if (PySequence_Fast_GET_SIZE(fast) != 257) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "init: STATIC_CODES must hold 257 codes");
        return NULL;
    }
    static int filled[1 << DECODE_BITS];
    memset(filled, 0, sizeof filled);
    for (int s = 0; s < 257; s++) {
        long e = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, s));
        if (e == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return NULL;
        }
        long code = e >> 4, len = e & 15;
        if (e < 0 || len < 1 || len > DECODE_BITS || code >= (1L << len)) {
            Py_DECREF(fast);
            PyErr_Format(PyExc_ValueError, "init: bad Huffman code entry %ld for symbol %d", e, s);
            return NULL;
        }
        if (s < 256) {
            enc_code[s] = (uint16_t)code;
            enc_len[s] = (uint8_t)len;
        }
        for (long high = 0; high < (1L << (DECODE_BITS - len)); high++) {
            long idx = code | (high << len);
            dec_symbol[idx] = (uint16_t)s;
            dec_length[idx] = (uint8_t)len;
            filled[idx]++;
        }
    }
    Py_DECREF(fast);
    for (int i = 0; i < (1 << DECODE_BITS); i++) {
        if (filled[i] != 1) {
            PyErr_SetString(PyExc_ValueError, "init: STATIC_CODES is not a complete prefix code");
            return NULL;
        }
    }
    Py_INCREF(err);
    Py_XSETREF(MsgError, err);
    Py_INCREF(ew);
    Py_XSETREF(entity_widths, ew);
    Py_INCREF(pw);
    Py_XSETREF(player_widths, pw);
    tables_ready = 1;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ bit writer */

typedef struct {
    uint8_t *buf;
    Py_ssize_t len, cap;
    uint64_t acc;   /* bits not yet flushed, stream order from bit 0; < 8 between puts */
    int nacc;
} Writer;

static int w_init(Writer *w, Py_ssize_t cap)
{
    w->buf = PyMem_Malloc(cap);
    if (w->buf == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    w->len = 0;
    w->cap = cap;
    w->acc = 0;
    w->nacc = 0;
    return 0;
}

/* Room for `need` more bytes (a field of n <= 64 bits takes at most 7 + 8 * 11 bits: 12 bytes). */
static int w_ensure(Writer *w, Py_ssize_t need)
{
    if (w->len + need <= w->cap)
        return 0;
    Py_ssize_t cap = w->cap * 2 + need;
    uint8_t *buf = PyMem_Realloc(w->buf, cap);
    if (buf == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    w->buf = buf;
    w->cap = cap;
    return 0;
}

static inline void w_put(Writer *w, uint64_t bits, int n)   /* n <= 32, bits < 2^n */
{
    w->acc |= bits << w->nacc;
    w->nacc += n;
    while (w->nacc >= 8) {
        w->buf[w->len++] = (uint8_t)w->acc;
        w->acc >>= 8;
        w->nacc -= 8;
    }
}

/* `MSG_WriteBits` of the low n bits (0 <= n <= 64): the raw n % 8 bits, then each byte coded. */
static inline void w_value(Writer *w, uint64_t value, int n)
{
    int raw = n & 7;
    if (raw) {
        w_put(w, value & ((1u << raw) - 1), raw);
        value >>= raw;
    }
    for (int i = n >> 3; i > 0; i--) {
        unsigned b = (unsigned)(value & 0xFF);
        value >>= 8;
        w_put(w, enc_code[b], enc_len[b]);
    }
}

static PyObject *w_finish(Writer *w)
{
    if (w->nacc)
        w->buf[w->len++] = (uint8_t)w->acc;
    PyObject *out = PyBytes_FromStringAndSize((const char *)w->buf, w->len);
    PyMem_Free(w->buf);
    w->buf = NULL;
    return out;
}

static void w_free(Writer *w)
{
    PyMem_Free(w->buf);
    w->buf = NULL;
}

/* The low 64 bits of any Python int (two's complement), as Python's `& mask` sees them. */
static inline int low64(PyObject *o, uint64_t *out)
{
    unsigned long long v = PyLong_AsUnsignedLongLongMask(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    *out = v;
    return 0;
}

/* huffman_bits(fields): see msg.py_huffman_bits; widths here are 0..64. Sequences are copied to
 * tuples throughout: an item's __index__ cannot then resize what is being walked. */
static PyObject *native_huffman_bits(PyObject *self, PyObject *fields)
{
    if (check_ready() < 0)
        return NULL;
    PyObject *fast = PySequence_Tuple(fields);
    if (fast == NULL)
        return NULL;
    Py_ssize_t npairs = PySequence_Fast_GET_SIZE(fast) / 2;
    PyObject **items = PySequence_Fast_ITEMS(fast);
    Writer w;
    if (w_init(&w, npairs * 4 + 16) < 0) {
        Py_DECREF(fast);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < npairs; i++) {
        uint64_t value;
        if (low64(items[2 * i], &value) < 0)
            goto fail;
        long n = PyLong_AsLong(items[2 * i + 1]);
        if (n == -1 && PyErr_Occurred())
            goto fail;
        if (n < 0 || n > 64) {
            PyErr_Format(PyExc_ValueError, "huffman_bits: width %ld outside 0..64", n);
            goto fail;
        }
        if (w_ensure(&w, 16) < 0)
            goto fail;
        w_value(&w, value, (int)n);
    }
    Py_DECREF(fast);
    return w_finish(&w);
fail:
    Py_DECREF(fast);
    w_free(&w);
    return NULL;
}

/* ------------------------------------------------------------------ strings (msg.sanitize) */

/* ioq3's string rules: stop at NUL; > 127 and `%` become `.`; a str is latin-1 with `?` for
 * what latin-1 cannot hold. Writes at most `cap` bytes to `out` and returns the full length,
 * or -1 with TypeError for anything but str or a bytes-like object. */
static Py_ssize_t sanitize_into(PyObject *text, uint8_t *out, Py_ssize_t cap)
{
    Py_ssize_t n = 0;
    if (PyUnicode_Check(text)) {
        Py_ssize_t len = PyUnicode_GET_LENGTH(text);
        int kind = PyUnicode_KIND(text);
        const void *data = PyUnicode_DATA(text);
        for (Py_ssize_t i = 0; i < len; i++, n++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (c == 0)
                break;
            if (n < cap)
                out[n] = (c > 255) ? '?' : (c > 127 || c == '%') ? '.' : (uint8_t)c;
        }
        return n;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(text, &view, PyBUF_SIMPLE) < 0)
        return -1;
    const uint8_t *p = view.buf;
    for (Py_ssize_t i = 0; i < view.len; i++, n++) {
        uint8_t c = p[i];
        if (c == 0)
            break;
        if (n < cap)
            out[n] = (c > 127 || c == '%') ? '.' : c;
    }
    PyBuffer_Release(&view);
    return n;
}

/* Upper bound of sanitize_into's length, for sizing its buffer. */
static Py_ssize_t text_size(PyObject *text)
{
    if (PyUnicode_Check(text))
        return PyUnicode_GET_LENGTH(text);
    Py_buffer view;
    if (PyObject_GetBuffer(text, &view, PyBUF_SIMPLE) < 0)
        return -1;
    Py_ssize_t n = view.len;
    PyBuffer_Release(&view);
    return n;
}

/* A new bytes object holding a copy of buf, safe to write into: PyBytes_FromStringAndSize with
 * data returns CPython's shared object for a 1-byte string. */
static PyObject *writable_copy(const void *buf, Py_ssize_t len)
{
    PyObject *out = PyBytes_FromStringAndSize(NULL, len);
    if (out != NULL && len > 0)
        memcpy(PyBytes_AS_STRING(out), buf, len);
    return out;
}

/* netchan._xor's rule on buf[start:len], in place: a key rolled over `text` (sanitized, wrapping
 * at its end, an empty text keys with one NUL) from index `start`, XORed with key0's low byte.
 * 0, or -1 with an exception. */
/* The rolling XOR over sanitized `chars` (n >= 1), in place on buf[start:len]. */
static void xor_chars(uint8_t *buf, Py_ssize_t start, Py_ssize_t len, uint64_t key0, const uint8_t *chars,
                      Py_ssize_t n)
{
    unsigned parity = (unsigned)start & 1, k = 0, k0 = (unsigned)(key0 & 0xFF);
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; i < len - start; i++) {
        k ^= (unsigned)chars[j] << ((parity + (unsigned)i) & 1);
        if (++j == n)
            j = 0;
        buf[start + i] ^= (uint8_t)(k ^ k0);
    }
}

static int xor_scramble(uint8_t *buf, Py_ssize_t start, Py_ssize_t len, uint64_t key0, PyObject *text)
{
    if (len - start <= 0)
        return 0;
    Py_ssize_t size = text_size(text);
    if (size < 0)
        return -1;
    uint8_t *chars = PyMem_Malloc(size + 1);
    if (chars == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t n = sanitize_into(text, chars, size);
    if (n < 0) {
        PyMem_Free(chars);
        return -1;
    }
    if (n == 0)
        chars[n++] = 0;
    xor_chars(buf, start, len, key0, chars, n);
    PyMem_Free(chars);
    return 0;
}

/* ------------------------------------------------------------------ usercmds */

/* A delta cmd: 33 + 1 bits, then 8 fields of at most 33 bits each coded (<= 7 + 4 * 11 bits). */
#define CMD_MAX_BYTES 64

typedef struct {
    uint64_t server_time, f[8];   /* f: angles 0-2, forward, right, up, buttons, weapon */
} Cmd;

static PyObject *s_server_time, *s_angles, *s_buttons, *s_weapon, *s_forwardmove, *s_rightmove, *s_upmove;

static int attr64(PyObject *o, PyObject *name, uint64_t *out)
{
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL)
        return -1;
    int r = low64(v, out);
    Py_DECREF(v);
    return r;
}

static int read_cmd(PyObject *o, Cmd *c)
{
    if (attr64(o, s_server_time, &c->server_time) < 0)
        return -1;
    PyObject *angles = PyObject_GetAttr(o, s_angles);
    if (angles == NULL)
        return -1;
    PyObject *fast = PySequence_Tuple(angles);
    Py_DECREF(angles);
    if (fast == NULL)
        return -1;
    if (PySequence_Fast_GET_SIZE(fast) != 3) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "UserCmd.angles must hold 3 values");
        return -1;
    }
    for (int i = 0; i < 3; i++) {
        if (low64(PySequence_Fast_GET_ITEM(fast, i), &c->f[i]) < 0) {
            Py_DECREF(fast);
            return -1;
        }
        c->f[i] &= 0xFFFFFFFFu;
    }
    Py_DECREF(fast);
    if (attr64(o, s_forwardmove, &c->f[3]) < 0 || attr64(o, s_rightmove, &c->f[4]) < 0
            || attr64(o, s_upmove, &c->f[5]) < 0 || attr64(o, s_buttons, &c->f[6]) < 0
            || attr64(o, s_weapon, &c->f[7]) < 0)
        return -1;
    c->f[3] &= 0xFF;
    c->f[4] &= 0xFF;
    c->f[5] &= 0xFF;
    c->f[6] &= 0xFFFFFFFFu;
    c->f[7] &= 0xFF;
    return 0;
}

/* usercmd.delta_usercmd_fields, written straight into the stream. */
static void w_delta_cmd(Writer *w, uint64_t key, const Cmd *frm, const Cmd *to, int button_bits)
{
    int32_t dt = (int32_t)(uint32_t)(to->server_time - frm->server_time);
    if (dt < 256)
        w_value(w, 1 | ((uint64_t)(dt & 0xFF) << 1), 9);
    else
        w_value(w, (to->server_time & 0xFFFFFFFFu) << 1, 33);
    if (memcmp(frm->f, to->f, sizeof frm->f) == 0) {
        w_put(w, 0, 1);
        return;
    }
    w_put(w, 1, 1);
    static const int widths16[8] = {16, 16, 16, 8, 8, 8, 16, 8};
    static const int widths32[8] = {16, 16, 16, 8, 8, 8, 32, 8};
    const int *widths = button_bits == 32 ? widths32 : widths16;
    uint64_t k = key ^ to->server_time;
    for (int i = 0; i < 8; i++) {
        if (frm->f[i] == to->f[i]) {
            w_put(w, 0, 1);
        } else {
            uint64_t mask = (1ULL << widths[i]) - 1;
            w_value(w, 1 | (((to->f[i] ^ k) & mask) << 1), widths[i] + 1);
        }
    }
}

/* The message body of clientmsg.py_write_client_message into `w` (empty), same errors. */
static int write_message(Writer *w, PyObject *o_sid, PyObject *o_mseq, PyObject *o_cseq, PyObject *reliable,
                         PyObject *cmds, uint64_t key, PyObject *o_bb, int move_no_delta)
{
    Py_ssize_t ncmds = PyObject_Length(cmds);
    if (ncmds < 0)
        return -1;
    if (ncmds > MAX_PACKET_USERCMDS) {
        PyErr_Format(PyExc_ValueError, "%zd usercmds in one packet (max %d)", ncmds, MAX_PACKET_USERCMDS);
        return -1;
    }
    uint64_t sid, mseq, cseq;
    if (low64(o_sid, &sid) < 0 || low64(o_mseq, &mseq) < 0 || low64(o_cseq, &cseq) < 0)
        return -1;
    PyObject *rfast = PySequence_Tuple(reliable);
    if (rfast == NULL)
        return -1;
    PyObject *cfast = NULL, *pfast = NULL;
    if (w_ensure(w, 16) < 0)
        goto fail;
    w_value(w, sid, 32);
    w_value(w, mseq, 32);
    w_value(w, cseq, 32);
    uint8_t text[MAX_STRING_CHARS];
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(rfast); i++) {
        pfast = PySequence_Tuple(PySequence_Fast_GET_ITEM(rfast, i));
        if (pfast == NULL)
            goto fail;
        if (PySequence_Fast_GET_SIZE(pfast) != 2) {
            PyErr_SetString(PyExc_ValueError, "reliable_commands must hold (seq, text) pairs");
            goto fail;
        }
        PyObject *o_seq = PySequence_Fast_GET_ITEM(pfast, 0), *o_text = PySequence_Fast_GET_ITEM(pfast, 1);
        uint64_t seq;
        Py_ssize_t n = sanitize_into(o_text, text, MAX_STRING_CHARS - 1);
        if (n < 0)
            goto fail;
        if (n >= MAX_STRING_CHARS) {
            /* ioq3 would silently send an empty string instead; refuse rather than lose the text. */
            PyErr_Format(PyExc_ValueError, "string of %zd chars exceeds the %d-char limit", n, MAX_STRING_CHARS - 1);
            goto fail;
        }
        if (low64(o_seq, &seq) < 0)
            goto fail;
        Py_CLEAR(pfast);
        if (w_ensure(w, 16 + 2 * n) < 0)
            goto fail;
        w_value(w, CLC_CLIENT_COMMAND, 8);
        w_value(w, seq, 32);
        for (Py_ssize_t j = 0; j < n; j++)
            w_value(w, text[j], 8);
        w_value(w, 0, 8);
    }
    if (ncmds) {
        long bb = 16;
        if (o_bb != NULL) {
            bb = PyLong_AsLong(o_bb);
            if (bb == -1 && PyErr_Occurred())
                goto fail;
        }
        if (bb != 16 && bb != 32) {
            PyErr_Format(PyExc_ValueError, "button_bits must be 16 or 32, not %R", o_bb);
            goto fail;
        }
        cfast = PySequence_Tuple(cmds);
        if (cfast == NULL)
            goto fail;
        if (w_ensure(w, 16) < 0)
            goto fail;
        w_value(w, move_no_delta ? CLC_MOVE_NO_DELTA : CLC_MOVE, 8);
        w_value(w, (uint64_t)ncmds, 8);
        Cmd prev, cur;
        memset(&prev, 0, sizeof prev);
        for (Py_ssize_t i = 0; i < ncmds && i < PySequence_Fast_GET_SIZE(cfast); i++) {
            if (read_cmd(PySequence_Fast_GET_ITEM(cfast, i), &cur) < 0)
                goto fail;
            if (w_ensure(w, CMD_MAX_BYTES) < 0)
                goto fail;
            w_delta_cmd(w, key, &prev, &cur, (int)bb);
            prev = cur;
        }
        Py_CLEAR(cfast);
    }
    if (w_ensure(w, 16) < 0)
        goto fail;
    w_value(w, CLC_EOF, 8);
    Py_DECREF(rfast);
    return 0;
fail:
    Py_XDECREF(pfast);
    Py_XDECREF(cfast);
    Py_DECREF(rfast);
    return -1;
}

/* write_client_message(...): clientmsg.write_client_message, same arguments and errors. */
static PyObject *native_client_message(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"server_id", "server_message_seq", "server_command_seq", "reliable_commands",
                             "cmds", "key", "button_bits", "move_no_delta", NULL};
    PyObject *o_sid, *o_mseq, *o_cseq, *reliable, *cmds, *o_key, *o_bb = NULL;
    int move_no_delta = 0;
    uint64_t key;
    Writer w;
    if (check_ready() < 0)
        return NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOO|Op:write_client_message", kwlist, &o_sid, &o_mseq,
                                     &o_cseq, &reliable, &cmds, &o_key, &o_bb, &move_no_delta))
        return NULL;
    if (low64(o_key, &key) < 0 || w_init(&w, 128) < 0)
        return NULL;
    if (write_message(&w, o_sid, o_mseq, o_cseq, reliable, cmds, key, o_bb, move_no_delta) < 0) {
        w_free(&w);
        return NULL;
    }
    return w_finish(&w);
}

/* usercmd.hash_key(text, 32): sum of c * (119 + i) over at most 32 sanitized chars, folded. */
static int hash_key32(PyObject *text, int64_t *out)
{
    uint8_t chars[32];
    Py_ssize_t n = sanitize_into(text, chars, 32);
    if (n < 0)
        return -1;
    if (n > 32)
        n = 32;
    int64_t h = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        h += (int64_t)chars[i] * (119 + i);
    *out = (int32_t)(uint32_t)(h ^ (h >> 10) ^ (h >> 20));
    return 0;
}

#define FRAGMENT_SIZE 1300
#define CL_ENCODE_START 12

/* client_datagram(legacy, challenge, sequence, qport, server_id, message_seq, command_seq, reliable, cmds,
 *                 checksum_feed, last_command, button_bits, move_no_delta):
 * write_client_message with usercmd_key(checksum_feed, message_seq, last_command), then the netchan's
 * transmit of it as one datagram: header, and the legacy XOR keyed by challenge ^ server_id ^
 * message_seq over last_command (which is serverCommands[command_seq & 63], the scramble text too).
 * None when the message needs fragments (the caller takes the general path). */
static PyObject *native_client_datagram(PyObject *self, PyObject *args)
{
    int legacy, move_no_delta;
    PyObject *o_challenge, *o_seq, *o_qport, *o_sid, *o_mseq, *o_cseq, *reliable, *cmds, *o_feed, *last, *o_bb;
    uint64_t challenge, seq, qport, sid, mseq, feed;
    int64_t hash;
    Writer w;
    if (check_ready() < 0)
        return NULL;
    if (!PyArg_ParseTuple(args, "pOOOOOOOOOOOp:client_datagram", &legacy, &o_challenge, &o_seq, &o_qport, &o_sid,
                          &o_mseq, &o_cseq, &reliable, &cmds, &o_feed, &last, &o_bb, &move_no_delta))
        return NULL;
    if (low64(o_challenge, &challenge) < 0 || low64(o_seq, &seq) < 0 || low64(o_qport, &qport) < 0
            || low64(o_sid, &sid) < 0 || low64(o_mseq, &mseq) < 0 || low64(o_feed, &feed) < 0
            || hash_key32(last, &hash) < 0)
        return NULL;
    if (w_init(&w, 160) < 0)
        return NULL;
    /* the header first: 4 + 2 (+ 4) bytes, the message after it */
    int header = legacy ? 6 : 10;
    w.len = header;
    uint64_t key = feed ^ mseq ^ (uint64_t)hash;
    if (write_message(&w, o_sid, o_mseq, o_cseq, reliable, cmds, key, o_bb, move_no_delta) < 0) {
        w_free(&w);
        return NULL;
    }
    if (w.nacc) {
        w.buf[w.len++] = (uint8_t)w.acc;
        w.nacc = 0;
    }
    Py_ssize_t msglen = w.len - header;
    if (msglen >= FRAGMENT_SIZE) {
        w_free(&w);
        Py_RETURN_NONE;
    }
    uint8_t *p = w.buf;
    uint32_t s = (uint32_t)seq;
    p[0] = (uint8_t)s; p[1] = (uint8_t)(s >> 8); p[2] = (uint8_t)(s >> 16); p[3] = (uint8_t)(s >> 24);
    p[4] = (uint8_t)qport; p[5] = (uint8_t)(qport >> 8);
    if (!legacy) {
        uint32_t c = (uint32_t)(challenge ^ (seq * challenge));
        p[6] = (uint8_t)c; p[7] = (uint8_t)(c >> 8); p[8] = (uint8_t)(c >> 16); p[9] = (uint8_t)(c >> 24);
    } else if (xor_scramble(p + header, CL_ENCODE_START, msglen, challenge ^ sid ^ mseq, last) < 0) {
        w_free(&w);
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize((const char *)w.buf, w.len);
    w_free(&w);
    return out;
}

/* ------------------------------------------------------------------ netchan helpers */

/* xor(data, start, key, text): netchan._xor without the stream cache (C needs none). */
static PyObject *native_xor(PyObject *self, PyObject *args)
{
    Py_buffer data;
    Py_ssize_t start;
    PyObject *o_key, *text, *out = NULL;
    uint64_t key;
    if (!PyArg_ParseTuple(args, "y*nOO:xor", &data, &start, &o_key, &text))
        return NULL;
    if (start < 0) {
        PyErr_SetString(PyExc_ValueError, "xor: negative start");
        goto done;
    }
    if (low64(o_key, &key) < 0)
        goto done;
    out = writable_copy(data.buf, data.len);
    if (out != NULL && xor_scramble((uint8_t *)PyBytes_AS_STRING(out), start, data.len, key, text) < 0)
        Py_CLEAR(out);
done:
    PyBuffer_Release(&data);
    return out;
}

/* ioq3's lenient MSG_ReadLong (bitstream mode) of `count` longs from byte `start` into out[]:
 * an overread gives -1, the NYT escape ORs 256 into the value (see netchan._ioq3_read_longs). */
static void lenient_longs(const uint8_t *p, int64_t size, int64_t start, Py_ssize_t count, int64_t *out)
{
    int64_t end = size << 3, readcount = start;
    int64_t bit = (start > size ? 0 : start) << 3;   /* past the end: every read is -1 */
    for (Py_ssize_t n = 0; n < count; n++) {
        int64_t v = -1;
        if (readcount <= size) {
            uint64_t value = 0;
            int i;
            for (i = 0; i < 4; i++) {
                int64_t j = bit >> 3;
                unsigned w = 0;
                for (int b = 0; b < 3; b++)
                    if (j + b < size)
                        w |= (unsigned)p[j + b] << (8 * b);
                unsigned idx = (w >> (bit & 7)) & ((1u << DECODE_BITS) - 1);
                if (bit + dec_length[idx] > end) {
                    readcount = size + 1;
                    break;
                }
                value |= (uint64_t)dec_symbol[idx] << (8 * i);
                bit += dec_length[idx];
            }
            if (i == 4)
                readcount = (bit >> 3) + 1;
            if (readcount <= size)
                v = (int32_t)(uint32_t)value;
        }
        out[n] = v;
    }
}

#define SV_ENCODE_START 4
#define RING 64

/* legacy_unscramble(message, key, reliable_commands): netchan._unscramble, `key` being
 * challenge ^ sequence: the acknowledge read (leniently) from the scrambled bytes picks the
 * text from the 64-slot ring; the XOR runs from byte 4. */
static PyObject *native_legacy_unscramble(PyObject *self, PyObject *args)
{
    Py_buffer data;
    PyObject *o_key, *ring, *out = NULL;
    uint64_t key;
    if (check_ready() < 0)
        return NULL;
    if (!PyArg_ParseTuple(args, "y*OO:legacy_unscramble", &data, &o_key, &ring))
        return NULL;
    Py_ssize_t nring = PyObject_Length(ring);
    if (nring < 0 || low64(o_key, &key) < 0)
        goto done;
    if (nring != RING) {
        PyErr_Format(PyExc_ValueError, "legacy netchan needs a %d-slot command ring, got %zd slots", RING, nring);
        goto done;
    }
    out = writable_copy(data.buf, data.len);
    if (out == NULL || data.len <= SV_ENCODE_START)
        goto done;
    int64_t ack;
    lenient_longs(data.buf, data.len, 0, 1, &ack);
    PyObject *text = PySequence_GetItem(ring, (Py_ssize_t)(ack & (RING - 1)));
    if (text == NULL || xor_scramble((uint8_t *)PyBytes_AS_STRING(out), SV_ENCODE_START, data.len, key, text) < 0)
        Py_CLEAR(out);
    Py_XDECREF(text);
done:
    PyBuffer_Release(&data);
    return out;
}

/* read_longs(data, start, count): netchan._ioq3_read_longs. */
static PyObject *native_read_longs(PyObject *self, PyObject *args)
{
    Py_buffer data;
    Py_ssize_t start, count;
    if (check_ready() < 0)
        return NULL;
    if (!PyArg_ParseTuple(args, "y*nn:read_longs", &data, &start, &count))
        return NULL;
    PyObject *out = NULL;
    int64_t *values = NULL;
    if (start < 0) {
        PyErr_SetString(PyExc_ValueError, "read_longs: negative start");
        goto done;
    }
    if (count < 0)
        count = 0;
    values = PyMem_Malloc(sizeof(int64_t) * (count + 1));
    if (values == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    lenient_longs(data.buf, data.len, start, count, values);
    out = PyList_New(count);
    for (Py_ssize_t n = 0; out != NULL && n < count; n++) {
        PyObject *item = PyLong_FromLongLong(values[n]);
        if (item == NULL)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, n, item);
    }
done:
    PyMem_Free(values);
    PyBuffer_Release(&data);
    return out;
}

/* ------------------------------------------------------------------ bit reader */

typedef struct {
    PyObject_HEAD
    uint8_t *buf;       /* a copy of the message, PAD zero bytes after it */
    int64_t bit, end;
} Reader;

static inline unsigned peek(const Reader *r, int64_t bit)   /* 17+ bits from `bit` (bit <= end) */
{
    const uint8_t *p = r->buf + (bit >> 3);
    return ((unsigned)p[0] | ((unsigned)p[1] << 8) | ((unsigned)p[2] << 16)) >> (bit & 7);
}

static int Reader_init(Reader *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"data", "start", NULL};
    Py_buffer data;
    Py_ssize_t start = 0;
    if (check_ready() < 0)
        return -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*|n:BitReader", kwlist, &data, &start))
        return -1;
    if (start < 0 || start > data.len) {
        PyErr_Format(MsgError, "message start %zd outside a %zd-byte packet", start, data.len);
        PyBuffer_Release(&data);
        return -1;
    }
    uint8_t *buf = PyMem_Malloc(data.len + PAD);
    if (buf == NULL) {
        PyBuffer_Release(&data);
        PyErr_NoMemory();
        return -1;
    }
    memcpy(buf, data.buf, data.len);
    memset(buf + data.len, 0, PAD);
    PyMem_Free(self->buf);
    self->buf = buf;
    self->bit = (int64_t)start << 3;
    self->end = (int64_t)data.len << 3;
    PyBuffer_Release(&data);
    return 0;
}

static void Reader_dealloc(Reader *self)
{
    PyMem_Free(self->buf);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int reader_ok(Reader *self)
{
    if (self->buf == NULL) {
        PyErr_SetString(PyExc_ValueError, "BitReader not initialized");
        return -1;
    }
    return 0;
}

/* msg._check_width: n = |nbits| in 1..32, -32 excluded. Returns n, or 0 with ValueError set. */
static int check_width(PyObject *o_nbits, long nbits, int overflow)
{
    long n = nbits < 0 ? -nbits : nbits;
    if (overflow || n == 0 || n > 32 || nbits == -32) {
        PyErr_Format(PyExc_ValueError, "bad bit width %R (1..32, or -1..-31 for signed)", o_nbits);
        return 0;
    }
    return (int)n;
}

/* MSG_ReadBits for n in 1..32; `is_signed` for a negative width. 0, or -1 with MsgError. */
static int rd_bits(Reader *r, int n, int is_signed, int64_t *out)
{
    int64_t bit = r->bit, end = r->end;
    int raw = n & 7;
    uint64_t value = 0;
    if (raw) {
        if (bit + raw > end) {
            PyErr_Format(MsgError, "overread: %d raw bits at bit %lld of %lld", raw, (long long)bit, (long long)end);
            return -1;
        }
        value = peek(r, bit) & ((1u << raw) - 1);
        bit += raw;
    }
    int shift = raw;
    for (int i = n >> 3; i > 0; i--) {
        unsigned idx = peek(r, bit) & ((1u << DECODE_BITS) - 1);
        unsigned symbol = dec_symbol[idx];
        bit += dec_length[idx];
        if (bit > end) {
            PyErr_Format(MsgError, "overread: Huffman symbol past the end (%lld bits)", (long long)end);
            return -1;
        }
        if (symbol == NYT) {
            PyErr_Format(MsgError, "garbage Huffman code (NYT) at bit %lld", (long long)(bit - dec_length[idx]));
            return -1;
        }
        value |= (uint64_t)symbol << shift;
        shift += 8;
    }
    r->bit = bit;
    int64_t v = (int64_t)value;
    if (is_signed) {
        /* ioq3 sign-extends from the byte-aligned part's width only (see msg.py) */
        int width = n - raw;
        if (width > 0 && width < 32 && (value >> (width - 1)) & 1)
            v = (int64_t)(value | (~0ULL << width));
    }
    if (v >= 0x80000000LL)
        v -= 0x100000000LL;
    *out = v;
    return 0;
}

static PyObject *Reader_read_bits(Reader *self, PyObject *o_nbits)
{
    int overflow;
    if (reader_ok(self) < 0)
        return NULL;
    long nbits = PyLong_AsLongAndOverflow(o_nbits, &overflow);
    if (nbits == -1 && PyErr_Occurred())
        return NULL;
    int n = (nbits > 0 && nbits <= 32 && !overflow) ? (int)nbits : check_width(o_nbits, nbits, overflow);
    if (n == 0)
        return NULL;
    int64_t v;
    if (rd_bits(self, n, nbits < 0, &v) < 0)
        return NULL;
    return PyLong_FromLongLong(v);
}



static PyObject *Reader_read_byte(Reader *self, PyObject *unused)
{
    int64_t v;
    if (reader_ok(self) < 0 || rd_bits(self, 8, 0, &v) < 0)
        return NULL;
    return PyLong_FromLongLong(v);
}

static PyObject *Reader_read_short(Reader *self, PyObject *unused)
{
    int64_t v;
    if (reader_ok(self) < 0 || rd_bits(self, 16, 0, &v) < 0)
        return NULL;
    return PyLong_FromLongLong(v >= 0x8000 ? v - 0x10000 : v);
}

static PyObject *Reader_read_long(Reader *self, PyObject *unused)
{
    int64_t v;
    if (reader_ok(self) < 0 || rd_bits(self, 32, 0, &v) < 0)
        return NULL;
    return PyLong_FromLongLong(v);
}

static PyObject *Reader_read_data(Reader *self, PyObject *o_length)
{
    if (reader_ok(self) < 0)
        return NULL;
    int overflow;
    long long length = PyLong_AsLongLongAndOverflow(o_length, &overflow);
    if (length == -1 && PyErr_Occurred())
        return NULL;
    if (overflow || length < 0 || length > self->end - self->bit) {
        PyErr_Format(MsgError, "cannot read %R bytes with %lld bits left", o_length,
                     (long long)(self->end - self->bit));
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)length);
    if (out == NULL)
        return NULL;
    uint8_t *dst = (uint8_t *)PyBytes_AS_STRING(out);
    for (long long i = 0; i < length; i++) {
        int64_t v;
        if (rd_bits(self, 8, 0, &v) < 0) {
            Py_DECREF(out);
            return NULL;
        }
        dst[i] = (uint8_t)v;
    }
    return out;
}

static PyObject *read_limited(Reader *self, Py_ssize_t limit)
{
    if (reader_ok(self) < 0)
        return NULL;
    uint8_t out[BIG_INFO_STRING];
    Py_ssize_t n = 0, keep = limit - 1;
    for (;;) {
        int64_t c;
        if (rd_bits(self, 8, 0, &c) < 0)
            return NULL;
        /* Like ioq3: the char after a full buffer is consumed and the read stops there. */
        if (c == 0 || n >= keep)
            break;
        out[n++] = (c > 127 || c == '%') ? '.' : (uint8_t)c;
    }
    return PyUnicode_DecodeASCII((const char *)out, n, NULL);
}

static PyObject *Reader_read_string(Reader *self, PyObject *unused)
{
    return read_limited(self, MAX_STRING_CHARS);
}

static PyObject *Reader_read_bigstring(Reader *self, PyObject *unused)
{
    return read_limited(self, BIG_INFO_STRING);
}

/* The value of field i (width `width`): 0 with *out set, or -1. Mirrors msg.PyBitReader.read_netfields,
 * including where self->bit stands when an error is raised. */
static int read_field(Reader *self, int64_t *bitp, PyObject *o_width, long width, int zero_flags, PyObject **out)
{
    int64_t bit = *bitp, end = self->end, v;
    if (zero_flags) {
        if (bit >= end) {
            PyErr_Format(MsgError, "overread: zero flag at bit %lld of %lld", (long long)bit, (long long)end);
            return -1;
        }
        unsigned nonzero = peek(self, bit) & 1;
        bit++;
        if (!nonzero) {
            *bitp = bit;
            *out = width ? PyLong_FromLong(0) : PyFloat_FromDouble(0.0);
            return *out ? 0 : -1;
        }
    }
    if (width == 0) {
        if (bit >= end) {
            PyErr_Format(MsgError, "overread: float form flag at bit %lld of %lld", (long long)bit, (long long)end);
            return -1;
        }
        unsigned full = peek(self, bit) & 1;
        self->bit = bit + 1;
        if (full) {
            if (rd_bits(self, 32, 0, &v) < 0)
                return -1;
            uint32_t u = (uint32_t)v;
            unsigned char le[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16),
                                   (unsigned char)(u >> 24)};
            double d = PyFloat_Unpack4((const char *)le, 1);
            if (d == -1.0 && PyErr_Occurred())
                return -1;
            *out = PyFloat_FromDouble(d);
        } else {
            if (rd_bits(self, FLOAT_INT_BITS, 0, &v) < 0)
                return -1;
            *out = PyFloat_FromDouble((double)(v - FLOAT_INT_BIAS));
        }
    } else {
        self->bit = bit;
        int n = (width > 0 && width <= 32) ? (int)width : check_width(o_width, width, 0);
        if (n == 0 || rd_bits(self, n, width < 0, &v) < 0)
            return -1;
        *out = PyLong_FromLongLong(v);
    }
    *bitp = self->bit;
    return *out ? 0 : -1;
}

/* The netField walk (msg.read_netfields): a tuple like `base` with the changed fields read. */
static PyObject *netfields(Reader *self, PyObject *widths, PyObject *base, int zero_flags)
{
    int64_t lc;
    if (rd_bits(self, 8, 0, &lc) < 0)
        return NULL;
    PyObject *wfast = PySequence_Tuple(widths);
    if (wfast == NULL)
        return NULL;
    Py_ssize_t nw = PySequence_Fast_GET_SIZE(wfast);
    if (lc > nw) {
        Py_DECREF(wfast);
        PyErr_Format(MsgError, "invalid field count %lld (max %zd)", (long long)lc, nw);
        return NULL;
    }
    PyObject *values = PySequence_List(base);
    if (values == NULL) {
        Py_DECREF(wfast);
        return NULL;
    }
    int64_t bit = self->bit, end = self->end;
    for (Py_ssize_t i = 0; i < lc; i++) {
        if (bit >= end) {
            PyErr_Format(MsgError, "overread: field flag at bit %lld of %lld", (long long)bit, (long long)end);
            goto fail;
        }
        unsigned changed = peek(self, bit) & 1;
        bit++;
        if (!changed)
            continue;
        PyObject *o_width = PySequence_Fast_GET_ITEM(wfast, i);
        int overflow;
        long width = PyLong_AsLongAndOverflow(o_width, &overflow);
        if (width == -1 && PyErr_Occurred())
            goto fail;
        if (overflow)
            width = 64;   /* any out-of-range width: check_width reports it */
        PyObject *item;
        if (read_field(self, &bit, o_width, width, zero_flags, &item) < 0)
            goto fail;
        if (PyList_SetItem(values, i, item) < 0)   /* steals item; IndexError past len(base) */
            goto fail;
    }
    self->bit = bit;
    Py_DECREF(wfast);
    PyObject *t = PyList_AsTuple(values);
    Py_DECREF(values);
    return t;
fail:
    Py_DECREF(wfast);
    Py_DECREF(values);
    return NULL;
}

static PyObject *Reader_read_netfields(Reader *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"widths", "base", "zero_flags", NULL};
    PyObject *widths, *base;
    int zero_flags;
    if (reader_ok(self) < 0)
        return NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOp:read_netfields", kwlist, &widths, &base, &zero_flags))
        return NULL;
    return netfields(self, widths, base, zero_flags);
}

/* A MsgError being raised becomes MsgError("what: <its message>"): the prefix of
 * PyBitReader.read_entity_delta and read_playerstate_delta. */
static PyObject *prefix_msgerror(const char *what)
{
    if (!PyErr_ExceptionMatches(MsgError))
        return NULL;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *text = value ? PyObject_Str(value) : NULL;
    if (text != NULL)
        PyErr_Format(MsgError, "%s: %U", what, text);
    Py_XDECREF(text);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return NULL;
}

static int rd_flag(Reader *self, unsigned *out)
{
    if (self->bit >= self->end) {
        PyErr_Format(MsgError, "overread: 1 raw bit at bit %lld of %lld", (long long)self->bit, (long long)self->end);
        return -1;
    }
    *out = peek(self, self->bit) & 1;
    self->bit++;
    return 0;
}

/* read_entity_delta(base_values): see msg.PyBitReader.read_entity_delta. */
static PyObject *Reader_read_entity_delta(Reader *self, PyObject *base)
{
    unsigned removed, changed;
    if (reader_ok(self) < 0 || rd_flag(self, &removed) < 0)
        return NULL;
    if (removed)
        Py_RETURN_NONE;
    if (rd_flag(self, &changed) < 0)
        return NULL;
    if (!changed) {
        Py_INCREF(base);
        return base;
    }
    PyObject *values = netfields(self, entity_widths, base, 1);
    return values ? values : prefix_msgerror("entityState");
}

#define PS_ARRAYS 4
#define PS_ARRAY_LENGTH 16

/* read_playerstate_delta(base_values, stats, persistant, ammo, powerups): see msg.PyBitReader. */
static PyObject *Reader_read_playerstate_delta(Reader *self, PyObject *args)
{
    PyObject *base, *arrays[PS_ARRAYS];
    if (reader_ok(self) < 0)
        return NULL;
    if (!PyArg_ParseTuple(args, "OOOOO:read_playerstate_delta", &base, &arrays[0], &arrays[1], &arrays[2], &arrays[3]))
        return NULL;
    PyObject *values = netfields(self, player_widths, base, 0);
    if (values == NULL)
        return prefix_msgerror("playerState");
    PyObject *out = PyTuple_New(1 + PS_ARRAYS);
    if (out == NULL) {
        Py_DECREF(values);
        return NULL;
    }
    PyTuple_SET_ITEM(out, 0, values);
    for (int k = 0; k < PS_ARRAYS; k++) {
        Py_INCREF(arrays[k]);
        PyTuple_SET_ITEM(out, 1 + k, arrays[k]);
    }
    unsigned any, changed;
    if (rd_flag(self, &any) < 0)
        goto fail;
    for (int k = 0; any && k < PS_ARRAYS; k++) {
        if (rd_flag(self, &changed) < 0)
            goto fail;
        if (!changed)
            continue;
        int64_t mask, v;
        if (rd_bits(self, PS_ARRAY_LENGTH, 0, &mask) < 0)
            goto fail;
        PyObject *current = PySequence_List(arrays[k]);
        if (current == NULL)
            goto fail;
        for (int i = 0; i < PS_ARRAY_LENGTH; i++) {
            if (!(mask & (1 << i)))
                continue;
            /* stats, persistant, ammo are shorts; powerups longs */
            if (rd_bits(self, k < 3 ? 16 : 32, 0, &v) < 0) {
                Py_DECREF(current);
                goto fail;
            }
            if (k < 3 && v >= 0x8000)
                v -= 0x10000;
            PyObject *item = PyLong_FromLongLong(v);
            if (item == NULL || PyList_SetItem(current, i, item) < 0) {   /* steals item */
                Py_DECREF(current);
                goto fail;
            }
        }
        PyObject *t = PyList_AsTuple(current);
        Py_DECREF(current);
        if (t == NULL)
            goto fail;
        Py_SETREF(PyTuple_GET_ITEM(out, 1 + k), t);
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static PyObject *Reader_read_flag(Reader *self, PyObject *unused)
{
    unsigned b;
    if (reader_ok(self) < 0 || rd_flag(self, &b) < 0)
        return NULL;
    return PyLong_FromLong(b);
}

static PyObject *Reader_get_bit(Reader *self, void *closure)
{
    return PyLong_FromLongLong(self->bit);
}

static PyObject *Reader_get_bits_left(Reader *self, void *closure)
{
    return PyLong_FromLongLong(self->end - self->bit);
}

static PyMethodDef Reader_methods[] = {
    {"read_flag", (PyCFunction)Reader_read_flag, METH_NOARGS, "One raw bit (MSG_ReadBits(msg, 1))."},
    {"read_bits", (PyCFunction)Reader_read_bits, METH_O, "MSG_ReadBits (see msg.PyBitReader.read_bits)."},
    {"read_byte", (PyCFunction)Reader_read_byte, METH_NOARGS, NULL},
    {"read_short", (PyCFunction)Reader_read_short, METH_NOARGS, "16 bits as a signed short."},
    {"read_long", (PyCFunction)Reader_read_long, METH_NOARGS, NULL},
    {"read_data", (PyCFunction)Reader_read_data, METH_O, NULL},
    {"read_string", (PyCFunction)Reader_read_string, METH_NOARGS, "MSG_ReadString."},
    {"read_bigstring", (PyCFunction)Reader_read_bigstring, METH_NOARGS, "MSG_ReadBigString."},
    {"read_netfields", (PyCFunction)(void (*)(void))Reader_read_netfields, METH_VARARGS | METH_KEYWORDS,
     "The netField walk of MSG_ReadDeltaEntity / MSG_ReadDeltaPlayerstate."},
    {"read_entity_delta", (PyCFunction)Reader_read_entity_delta, METH_O,
     "MSG_ReadDeltaEntity after the number: None (removed), base_values (unchanged) or the new values."},
    {"read_playerstate_delta", (PyCFunction)Reader_read_playerstate_delta, METH_VARARGS,
     "MSG_ReadDeltaPlayerstate: (values, stats, persistant, ammo, powerups)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Reader_getset[] = {
    {"bit", (getter)Reader_get_bit, NULL, "Current stream position in bits from the start of data.", NULL},
    {"bits_left", (getter)Reader_get_bits_left, NULL, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "headcast.netcode.q3._q3native.BitReader",
    .tp_doc = "Reads a Quake 3 Huffman bitstream (the C twin of msg.PyBitReader).",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Reader_init,
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_methods = Reader_methods,
    .tp_getset = Reader_getset,
};

/* ------------------------------------------------------------------ the in-game pump */

/* Pump(fd): the in-game command tick of transport.Q3Client.run, in C.
 *
 * Between two server messages a Quake 3 client's ticks differ only in the usercmd's time and
 * input, the netchan sequence and the duplicated previous cmd; everything else in the packet is
 * fixed by the last server message. configure() takes that context from the Python core
 * (Q3ClientCore._pump_context), run(until) then sleeps to each tick, builds and sends the tick's
 * datagram exactly as client._linked_timer + _send_packet + client_datagram would, and returns to
 * Python when a datagram is waiting (read at ticks only, after the send, as the transport does),
 * when a tick needs Python (the silence probe, the timeout, a message that needs fragments), when
 * interrupted, when its log is full, or at `until`. take() hands the ticks back so the core's
 * state is what its own ticks would have left. The GIL is released for the whole loop; set_input
 * and interrupt may come from another thread. */

#define PUMP_LOG 64
#define PUMP_QUEUE 16          /* server datagrams held between two hand-overs */
#define PUMP_MAX_READS 16      /* per tick (transport.MAX_READS_PER_POLL's role: a flood cannot hold the loop) */
#define PUMP_DATAGRAM 65536
#define SV_MAX_MSGLEN 16384    /* msg.MAX_MSGLEN */
#define USER_BUTTONS 0xFFF    /* vrhead.USER_BUTTON_MASK: what a non-VR link keeps of the buttons */
enum { PUMP_TICKED = -1, PUMP_UNTIL = 0, PUMP_READABLE = 1, PUMP_PYTHON = 2, PUMP_INTERRUPTED = 3,
       PUMP_LOG_FULL = 4, PUMP_NOT_DUE = 5 };

typedef struct {
    PyObject_HEAD
    int fd, configured, running;
    /* the packet's context (configure) */
    int legacy, bb, nodelta, vr, nrel;
    uint64_t challenge, qport, sid, mseq, cseq, key, feed;
    int64_t hash, in_seq;            /* the command text's hash key; the newest server sequence seen */
    uint8_t *text;                   /* the command text (sanitized, >= 1 byte) then the reliable texts */
    Py_ssize_t textlen;
    uint64_t rel_seq[64];
    Py_ssize_t rel_off[65];          /* reliable text i is text[rel_off[i] .. rel_off[i + 1]) */
    uint8_t *buf;                    /* a datagram's worth, sized by configure */
    Py_ssize_t cap;
    int64_t delta[3], snap_server_time, step_ms, last_cmd_time;
    int has_snap, nprev;
    double snap_time, last_packet, next_probe, silence_probe, timeout, period, timer;
    uint64_t seq;
    Cmd prev, prev2;                 /* the newest cmd and the one before it */
    /* input (set_input, any thread) */
    pthread_mutex_t lock;
    int64_t input[8];                /* ANGLE2SHORT of the wanted view x3, forward, right, up, buttons, weapon */
    int interrupt;
    /* since the last take() */
    int nlog;
    double log_now[PUMP_LOG];
    int64_t log_time[PUMP_LOG];
    uint64_t bytes;
    long send_errors;              /* failed sends and ICMP errors read back (transport.socket_errors) */
    double sent_at;
    uint8_t *rbuf;                 /* one datagram, for the reads */
    /* server datagrams read at ticks and not yet handed to the core (take) */
    double batch;                  /* the longest a datagram waits here (run's argument) */
    uint8_t *qbuf;
    Py_ssize_t qlen, qoff[PUMP_QUEUE + 1];
    int qn, urgent, read_failed;
    double qtime[PUMP_QUEUE], qlag[PUMP_QUEUE];   /* qlag: read this long after qtime (read_lag) */
    double read_lag;               /* the datagram being queued was read this long after the step's now */
    /* send_input: the input as given, for take_input (the core's set_input arguments) */
    int roll_clamp, fresh, fresh_head;   /* roll_clamp: Q3ClientCore.roll_clamped */
    double fresh_angles[3], fresh_head_pa[2];
    int64_t fresh_moves[5];          /* forward, right, up (clamped), buttons & USER_BUTTONS, weapon & 0xFF */
    struct SnapDec *snap;          /* snapshots decoded here (_q3snap.c), made on first use */
} Pump;

#include "_q3snap.c"

static double mono_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int Pump_init(Pump *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"fd", NULL};
    int fd;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "i:Pump", kwlist, &fd))
        return -1;
    if (self->running) {
        PyErr_SetString(PyExc_RuntimeError, "Pump is running");
        return -1;
    }
    self->fd = fd;
    return 0;
}

static PyObject *Pump_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    Pump *self = (Pump *)type->tp_alloc(type, 0);
    if (self != NULL) {
        self->fd = -1;
        pthread_mutex_init(&self->lock, NULL);
    }
    return (PyObject *)self;
}

static void Pump_dealloc(Pump *self)
{
    PyMem_Free(self->text);
    PyMem_Free(self->buf);
    PyMem_RawFree(self->rbuf);
    PyMem_RawFree(self->qbuf);
    if (self->snap != NULL)
        PyMem_RawFree(self->snap->rtext);
    PyMem_RawFree(self->snap);
    pthread_mutex_destroy(&self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *cmd_to_tuple(const Cmd *c)
{
    /* UserCmd's fields in order (server_time, angles, buttons, weapon, forwardmove, rightmove,
     * upmove) as the core's own cmds hold them: server_time as int32, moves as signed chars. */
    return Py_BuildValue("(L(KKK)KKLLL)", (long long)(int32_t)(uint32_t)c->server_time,
                         (unsigned long long)c->f[0], (unsigned long long)c->f[1], (unsigned long long)c->f[2],
                         (unsigned long long)c->f[6], (unsigned long long)c->f[7],
                         (long long)(int8_t)(uint8_t)c->f[3], (long long)(int8_t)(uint8_t)c->f[4],
                         (long long)(int8_t)(uint8_t)c->f[5]);
}

/* configure(context): the tuple client.Q3ClientCore._pump_context returns (its docstring lists the
 * fields). Same errors as client_datagram for the parts they share. */
static PyObject *Pump_configure(Pump *self, PyObject *ctx)
{
    int legacy, bb, nodelta, vr, has_snap;
    PyObject *o_challenge, *o_qport, *o_sid, *o_mseq, *o_cseq, *reliable, *o_feed, *last, *cmds;
    long long d[3], snap_server_time, step_ms, last_cmd_time;
    unsigned long long seq;
    double snap_time, last_packet, next_probe, silence_probe, timeout, period, timer;
    uint64_t challenge, qport, sid, mseq, cseq, feed;
    int64_t hash;
    if (check_ready() < 0)
        return NULL;
    if (self->running) {
        PyErr_SetString(PyExc_RuntimeError, "Pump.configure while it runs");
        return NULL;
    }
    if (!PyTuple_Check(ctx)) {
        PyErr_SetString(PyExc_TypeError, "Pump.configure takes the context tuple");
        return NULL;
    }
    long long in_seq;
    if (!PyArg_ParseTuple(ctx, "pOOOOOOOOipp(LLL)pLdLddddddKOLL:configure", &legacy, &o_challenge, &o_qport,
                          &o_sid, &o_mseq, &o_cseq, &reliable, &o_feed, &last, &bb, &nodelta, &vr, &d[0], &d[1],
                          &d[2], &has_snap, &snap_server_time, &snap_time, &step_ms, &last_packet, &next_probe,
                          &silence_probe, &timeout, &period, &timer, &seq, &cmds, &last_cmd_time, &in_seq))
        return NULL;
    if (bb != 16 && bb != 32) {
        PyErr_Format(PyExc_ValueError, "button_bits must be 16 or 32, not %d", bb);
        return NULL;
    }
    if (!(period > 0.0)) {
        PyErr_SetString(PyExc_ValueError, "Pump.configure: the tick period must be positive");
        return NULL;
    }
    if (low64(o_challenge, &challenge) < 0 || low64(o_qport, &qport) < 0 || low64(o_sid, &sid) < 0
            || low64(o_mseq, &mseq) < 0 || low64(o_cseq, &cseq) < 0 || low64(o_feed, &feed) < 0
            || hash_key32(last, &hash) < 0)
        return NULL;
    PyObject *rfast = PySequence_Tuple(reliable), *cfast = NULL;
    if (rfast == NULL)
        return NULL;
    Py_ssize_t nrel = PyTuple_GET_SIZE(rfast);
    if (nrel > 64) {
        PyErr_Format(PyExc_ValueError, "%zd reliable commands in flight (max 64)", nrel);
        goto fail;
    }
    /* Sizes first: the command text, then each reliable text. */
    Py_ssize_t size = text_size(last);
    if (size < 0)
        goto fail;
    Py_ssize_t total = size + 1;
    for (Py_ssize_t i = 0; i < nrel; i++) {
        PyObject *pair = PyTuple_GET_ITEM(rfast, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_ValueError, "reliable_commands must hold (seq, text) pairs");
            goto fail;
        }
        Py_ssize_t n = text_size(PyTuple_GET_ITEM(pair, 1));
        if (n < 0)
            goto fail;
        total += n;
    }
    uint8_t *text = PyMem_Malloc(total);
    if (text == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_ssize_t n = sanitize_into(last, text, size);
    if (n < 0) {
        PyMem_Free(text);
        goto fail;
    }
    if (n == 0)
        text[n++] = 0;   /* an empty text keys with one NUL (xor_scramble's rule) */
    Py_ssize_t at = n, textlen = n;
    uint64_t rel_seq[64];
    Py_ssize_t rel_off[65];
    for (Py_ssize_t i = 0; i < nrel; i++) {
        PyObject *pair = PyTuple_GET_ITEM(rfast, i);
        Py_ssize_t m = sanitize_into(PyTuple_GET_ITEM(pair, 1), text + at, total - at);
        if (m < 0 || low64(PyTuple_GET_ITEM(pair, 0), &rel_seq[i]) < 0) {
            PyMem_Free(text);
            goto fail;
        }
        if (m >= MAX_STRING_CHARS) {
            PyErr_Format(PyExc_ValueError, "string of %zd chars exceeds the %d-char limit", m, MAX_STRING_CHARS - 1);
            PyMem_Free(text);
            goto fail;
        }
        rel_off[i] = at;
        at += m;
    }
    rel_off[nrel] = at;
    /* The previous cmds (0, 1 or 2 UserCmds, oldest first). */
    cfast = PySequence_Tuple(cmds);
    if (cfast == NULL || PyTuple_GET_SIZE(cfast) > 2) {
        if (cfast != NULL)
            PyErr_SetString(PyExc_ValueError, "Pump.configure: at most 2 previous cmds");
        PyMem_Free(text);
        goto fail;
    }
    Cmd prev, prev2;
    memset(&prev, 0, sizeof prev);
    memset(&prev2, 0, sizeof prev2);
    Py_ssize_t nprev = PyTuple_GET_SIZE(cfast);
    if ((nprev >= 1 && read_cmd(PyTuple_GET_ITEM(cfast, nprev - 1), &prev) < 0)
            || (nprev == 2 && read_cmd(PyTuple_GET_ITEM(cfast, 0), &prev2) < 0)) {
        PyMem_Free(text);
        goto fail;
    }
    /* A datagram's bound: every coded byte takes at most 11 bits (< 2 bytes). */
    Py_ssize_t cap = 10 + 2 * (3 * 4 + (at - textlen) + 6 * nrel + 3) + 2 * CMD_MAX_BYTES + 16;
    if (cap > self->cap) {
        uint8_t *buf = PyMem_Realloc(self->buf, cap);
        if (buf == NULL) {
            PyErr_NoMemory();
            PyMem_Free(text);
            goto fail;
        }
        self->buf = buf;
        self->cap = cap;
    }
    PyMem_Free(self->text);
    self->text = text;
    self->textlen = textlen;
    self->nrel = (int)nrel;
    memcpy(self->rel_seq, rel_seq, sizeof rel_seq[0] * nrel);
    memcpy(self->rel_off, rel_off, sizeof rel_off[0] * (nrel + 1));
    self->legacy = legacy;
    self->bb = bb;
    self->nodelta = nodelta;
    self->vr = vr;
    self->challenge = challenge;
    self->qport = qport;
    self->sid = sid;
    self->mseq = mseq;
    self->cseq = cseq;
    self->feed = feed;
    self->hash = hash;
    self->key = feed ^ mseq ^ (uint64_t)hash;
    self->in_seq = in_seq;
    for (int i = 0; i < 3; i++)
        self->delta[i] = d[i];
    self->has_snap = has_snap;
    self->snap_server_time = snap_server_time;
    self->snap_time = snap_time;
    self->step_ms = step_ms;
    self->last_packet = last_packet;
    self->next_probe = next_probe;
    self->silence_probe = silence_probe;
    self->timeout = timeout;
    self->period = period;
    self->timer = timer;
    self->seq = seq;
    self->prev = prev;
    self->prev2 = prev2;
    self->nprev = (int)nprev;
    self->last_cmd_time = last_cmd_time;
    self->configured = 1;
    Py_DECREF(cfast);
    Py_DECREF(rfast);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(cfast);
    Py_DECREF(rfast);
    return NULL;
}

/* set_input(a0, a1, a2, forward, right, up, buttons, weapon): ANGLE2SHORT of the wanted view,
 * the moves, the buttons with the head bits packed in (a non-VR link keeps the user bits only) and
 * the weapon, as client.Q3ClientCore._wire_input gives them. Thread-safe. */
static PyObject *Pump_set_input(Pump *self, PyObject *args)
{
    long long v[8];
    if (!PyArg_ParseTuple(args, "LLLLLLLL:set_input", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]))
        return NULL;
    pthread_mutex_lock(&self->lock);
    for (int i = 0; i < 8; i++)
        self->input[i] = v[i];
    pthread_mutex_unlock(&self->lock);
    self->fresh = 0;   /* the core holds a newer input than send_input's (take_input: None) */
    Py_RETURN_NONE;
}

/* One tick at `now` (no Python objects: runs without the GIL). PUMP_TICKED when the datagram went
 * out (or the send failed and was counted), else why Python must do this tick. */
static int pump_tick(Pump *self, double now)
{
    double silent = now - self->last_packet;
    if (silent >= self->timeout || (silent >= self->silence_probe && now >= self->next_probe))
        return PUMP_PYTHON;   /* client._linked_timer's link watch */
    if (self->nlog == PUMP_LOG)
        return PUMP_LOG_FULL;
    int64_t in[8];
    pthread_mutex_lock(&self->lock);
    memcpy(in, self->input, sizeof in);
    pthread_mutex_unlock(&self->lock);
    /* client._make_cmd */
    Cmd cur;
    for (int i = 0; i < 3; i++)
        cur.f[i] = (uint64_t)(in[i] - self->delta[i]) & 0xFFFF;
    cur.f[3] = (uint64_t)in[3] & 0xFF;
    cur.f[4] = (uint64_t)in[4] & 0xFF;
    cur.f[5] = (uint64_t)in[5] & 0xFF;
    cur.f[6] = (uint64_t)(self->vr ? in[6] : (in[6] & USER_BUTTONS)) & 0xFFFFFFFFu;
    cur.f[7] = (uint64_t)in[7] & 0xFF;
    int64_t last = self->last_cmd_time, t;
    if (self->has_snap)
        t = self->snap_server_time + (int64_t)((now - self->snap_time) * 1000.0);
    else
        t = last + self->step_ms;
    if (t < last + 1)
        t = last + 1;
    t &= 0xFFFFFFFFLL;
    if (t & 0x80000000LL)
        t -= 0x100000000LL;
    cur.server_time = (uint64_t)t;
    /* client._send_packet: the message (write_message's layout) after the netchan header */
    int header = self->legacy ? 6 : 10;
    Writer w = {self->buf, header, self->cap, 0, 0};
    w_value(&w, self->sid, 32);
    w_value(&w, self->mseq, 32);
    w_value(&w, self->cseq, 32);
    for (int i = 0; i < self->nrel; i++) {
        w_value(&w, CLC_CLIENT_COMMAND, 8);
        w_value(&w, self->rel_seq[i], 32);
        for (Py_ssize_t j = self->rel_off[i]; j < self->rel_off[i + 1]; j++)
            w_value(&w, self->text[j], 8);
        w_value(&w, 0, 8);
    }
    w_value(&w, self->nodelta ? CLC_MOVE_NO_DELTA : CLC_MOVE, 8);
    w_value(&w, self->nprev ? 2 : 1, 8);
    Cmd zero;
    memset(&zero, 0, sizeof zero);
    if (self->nprev)
        w_delta_cmd(&w, self->key, &zero, &self->prev, self->bb);
    w_delta_cmd(&w, self->key, self->nprev ? &self->prev : &zero, &cur, self->bb);
    w_value(&w, CLC_EOF, 8);
    if (w.nacc) {
        w.buf[w.len++] = (uint8_t)w.acc;
        w.nacc = 0;
    }
    Py_ssize_t msglen = w.len - header;
    if (msglen >= FRAGMENT_SIZE)
        return PUMP_PYTHON;   /* fragments: the Python netchan's path */
    uint8_t *p = w.buf;
    uint32_t s = (uint32_t)self->seq;
    p[0] = (uint8_t)s; p[1] = (uint8_t)(s >> 8); p[2] = (uint8_t)(s >> 16); p[3] = (uint8_t)(s >> 24);
    p[4] = (uint8_t)self->qport; p[5] = (uint8_t)(self->qport >> 8);
    if (!self->legacy) {
        uint32_t c = (uint32_t)(self->challenge ^ (self->seq * self->challenge));
        p[6] = (uint8_t)c; p[7] = (uint8_t)(c >> 8); p[8] = (uint8_t)(c >> 16); p[9] = (uint8_t)(c >> 24);
    } else {
        xor_chars(p + header, CL_ENCODE_START, msglen, self->challenge ^ self->sid ^ self->mseq, self->text,
                  self->textlen);
    }
    if (send(self->fd, p, (size_t)w.len, 0) < 0)
        self->send_errors++;   /* a full buffer or a vanished route: the protocol resends */
    self->sent_at = mono_now();
    /* the state the core's own tick would leave */
    self->seq++;
    self->prev2 = self->prev;
    self->prev = cur;
    if (self->nprev < 2)
        self->nprev++;
    self->last_cmd_time = t;
    self->log_now[self->nlog] = now;
    self->log_time[self->nlog] = t;
    self->nlog++;
    self->bytes += (uint64_t)w.len;
    self->timer += self->period;
    if (self->timer <= now)
        self->timer = now + self->period;
    return PUMP_TICKED;
}

static int parse_time(PyObject *o, double *out)
{
    *out = PyFloat_AsDouble(o);
    if (*out == -1.0 && PyErr_Occurred())
        return -1;
    if (*out != *out) {
        PyErr_SetString(PyExc_ValueError, "Pump: time is NaN");
        return -1;
    }
    return 0;
}

static int pump_usable(Pump *self)
{
    if (!self->configured) {
        PyErr_SetString(PyExc_RuntimeError, "Pump is not configured");
        return -1;
    }
    if (self->running) {
        PyErr_SetString(PyExc_RuntimeError, "Pump is already running");
        return -1;
    }
    return 0;
}

/* tick(now): one tick at `now` if the timer is due (PUMP_NOT_DUE otherwise), for tests and for a
 * caller with its own clock. */
static PyObject *Pump_tick(Pump *self, PyObject *o_now)
{
    double now;
    if (parse_time(o_now, &now) < 0 || pump_usable(self) < 0)
        return NULL;
    if (now < self->timer)
        return PyLong_FromLong(PUMP_NOT_DUE);
    int r = pump_tick(self, now);
    return PyLong_FromLong(r);
}

/* interrupt(): make a run() in another thread return RUN_INTERRUPTED at its next wake (at the
 * latest one tick later). Thread-safe. */
static PyObject *Pump_interrupt(Pump *self, PyObject *unused)
{
    __atomic_store_n(&self->interrupt, 1, __ATOMIC_RELEASE);
    Py_RETURN_NONE;
}

/* take(): the ticks since the last take, and the state they left:
 * (nows, server_times, cmds (the last 0-2, oldest first, as UserCmd field tuples), outgoing
 *  sequence, last cmd time, timer, bytes sent, send errors, sent_at (None without ticks)). */
static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#define SVC_SNAPSHOT 7         /* serverparse.SVC_SNAPSHOT */

/* The first svc op of a server message body (after the netchan header), or -1 when it cannot be
 * read here: a short body, a garbage code, or (legacy) an op reaching into the bytes scrambled
 * from SV_ENCODE_START on. Five Huffman symbols: the reliable acknowledge long, then the op. */
static int first_op(const uint8_t *body, Py_ssize_t len, int legacy)
{
    uint8_t buf[24] = {0};   /* 5 symbols of <= 11 bits stay in the first 7 bytes; 3 more are peeked */
    memcpy(buf, body, (size_t)(len < 16 ? len : 16));
    int64_t bit = 0, end = (int64_t)len * 8;
    unsigned symbol = NYT;
    for (int i = 0; i < 5; i++) {
        const uint8_t *p = buf + (bit >> 3);
        unsigned idx = (((unsigned)p[0] | (unsigned)p[1] << 8 | (unsigned)p[2] << 16) >> (bit & 7))
                       & ((1u << DECODE_BITS) - 1);
        symbol = dec_symbol[idx];
        bit += dec_length[idx];
        if (bit > end || symbol == NYT)
            return -1;
    }
    if (legacy && bit > SV_ENCODE_START * 8)
        return -1;
    return (int)symbol;
}

/* A server datagram read at `now` (GIL released): queue it for the core and, when it is the next
 * in-sequence netchan packet and its first op is a snapshot, acknowledge it from the next tick on,
 * as ioq3 does with every packet it takes in (clc.serverMessageSequence): the message acknowledge,
 * and the keys built on it. The header checks are netchan.process's; anything else (out-of-band, a
 * fragment, a short or bad header, a message starting with server commands or a gamestate) makes
 * the hand-over urgent and is not acknowledged here: the core reads it at once and decides. (An
 * ioq3 server resends the gamestate to a client that acknowledges a later message while still
 * sending the old sv_serverid: only the core may acknowledge past a gamestate.) 0, or -1 when the
 * queue is full. */
static int pump_queue(Pump *self, const uint8_t *d, Py_ssize_t n, double now)
{
    if (self->snap != NULL && pump_snap(self, d, n, now))
        return 0;   /* a snapshot decoded in C (_q3snap.c): the core takes it at a hand-over */
    if (self->qn == PUMP_QUEUE || self->qlen + n > (Py_ssize_t)PUMP_QUEUE * PUMP_DATAGRAM)
        return -1;
    memcpy(self->qbuf + self->qlen, d, (size_t)n);
    self->qoff[self->qn] = self->qlen;
    self->qtime[self->qn] = now;
    self->qlag[self->qn] = self->read_lag;
    self->qlen += n;
    self->qn++;
    self->qoff[self->qn] = self->qlen;
    int header = self->legacy ? 4 : 8;
    if (n < header) {
        self->urgent = 1;
        return 0;
    }
    uint32_t raw = le32(d);
    if (raw == 0xFFFFFFFFu || (raw & 0x80000000u)) {
        self->urgent = 1;
        return 0;
    }
    int64_t seq = raw;
    if (!self->legacy && le32(d + 4) != (uint32_t)(self->challenge ^ ((uint64_t)seq * self->challenge))) {
        self->urgent = 1;
        return 0;
    }
    if (seq <= self->in_seq || n - header > SV_MAX_MSGLEN)
        return 0;   /* the core drops it (and counts why) */
    if (first_op(d + header, n - header, self->legacy) != SVC_SNAPSHOT) {
        self->urgent = 1;
        return 0;
    }
    self->in_seq = seq;
    self->mseq = (uint64_t)seq;
    self->key = self->feed ^ self->mseq ^ (uint64_t)self->hash;
    self->last_packet = now;
    return 0;
}

/* The tick at `now` (the timer is due), then the reads (GIL released). PUMP_TICKED to go on,
 * PUMP_READABLE when the queued datagrams should go to the core now, else why the core must
 * take over. */
static int pump_step(Pump *self, double now)
{
    double began = mono_now();
    int r = pump_tick(self, now);
    if (r != PUMP_TICKED)
        return r;
    /* the tick's datagram is out: now read, as the transport does at a tick (no readiness check
     * first: a non-blocking recv that finds nothing costs what poll() does, one syscall fewer when
     * something is there; an ICMP error or a closed descriptor comes back from recv as from poll) */
    for (int i = 0; i < PUMP_MAX_READS; i++) {
        ssize_t n = recv(self->fd, self->rbuf, PUMP_DATAGRAM, MSG_DONTWAIT);
        if (n < 0) {
            if (errno == ECONNREFUSED || errno == EHOSTUNREACH || errno == ENETUNREACH) {
                self->send_errors++;   /* an ICMP error queued on the connected socket */
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                self->read_failed = 1;  /* the core's own read meets it */
            break;
        }
        /* how long after `now` it was read: a snapshot decoded here that ran this tick's
         * usercmd (the server's frame fell between the send and this read) has a round trip
         * of that, not 0 (the snapshot log's lag; the core's read_lag) */
        self->read_lag = mono_now() - began;
        if (pump_queue(self, self->rbuf, n, now) < 0) {
            self->urgent = 1;   /* cannot happen with one read per datagram slot; stay bounded */
            break;
        }
        if (self->qn == PUMP_QUEUE)
            break;
    }
    if (self->read_failed)
        return PUMP_PYTHON;
    if (self->qn && (self->urgent || self->qn == PUMP_QUEUE || now - self->qtime[0] >= self->batch))
        return PUMP_READABLE;
    if (pump_snap_due(self, now))
        return PUMP_READABLE;
    return PUMP_TICKED;
}

/* take(): what happened since the last take, and the state it left: (tick times, their cmds'
 * server times, the last 0-2 cmds (oldest first, UserCmd field tuples), outgoing sequence, last
 * cmd time, timer, bytes sent, socket errors, sent_at (None without ticks), the server
 * datagrams read, their arrival times, how long after its arrival time each was read). */
static PyObject *take_log(Pump *self)
{
    int n = self->nlog;
    PyObject *nows = PyTuple_New(n), *times = PyTuple_New(n), *cmds = NULL, *out = NULL;
    PyObject *dgrams = PyTuple_New(self->qn), *arrivals = PyTuple_New(self->qn), *lags = PyTuple_New(self->qn);
    if (nows == NULL || times == NULL || dgrams == NULL || arrivals == NULL || lags == NULL)
        goto done;
    for (int i = 0; i < n; i++) {
        PyObject *a = PyFloat_FromDouble(self->log_now[i]), *b = PyLong_FromLongLong(self->log_time[i]);
        if (a == NULL || b == NULL) {
            Py_XDECREF(a);
            Py_XDECREF(b);
            goto done;
        }
        PyTuple_SET_ITEM(nows, i, a);
        PyTuple_SET_ITEM(times, i, b);
    }
    for (int i = 0; i < self->qn; i++) {
        PyObject *d = PyBytes_FromStringAndSize((const char *)self->qbuf + self->qoff[i], self->qoff[i + 1] - self->qoff[i]);
        PyObject *t = PyFloat_FromDouble(self->qtime[i]), *g = PyFloat_FromDouble(self->qlag[i]);
        if (d == NULL || t == NULL || g == NULL) {
            Py_XDECREF(d);
            Py_XDECREF(t);
            Py_XDECREF(g);
            goto done;
        }
        PyTuple_SET_ITEM(dgrams, i, d);
        PyTuple_SET_ITEM(arrivals, i, t);
        PyTuple_SET_ITEM(lags, i, g);
    }
    int k = n < 2 ? n : 2;
    cmds = PyTuple_New(k);
    if (cmds == NULL)
        goto done;
    for (int i = 0; i < k; i++) {
        PyObject *c = cmd_to_tuple(k == 2 && i == 0 ? &self->prev2 : &self->prev);
        if (c == NULL)
            goto done;
        PyTuple_SET_ITEM(cmds, i, c);
    }
    PyObject *sent_at = n ? PyFloat_FromDouble(self->sent_at) : (Py_INCREF(Py_None), Py_None);
    if (sent_at == NULL)
        goto done;
    out = Py_BuildValue("(OOOKLdKlNOOO)", nows, times, cmds, (unsigned long long)self->seq,
                        (long long)self->last_cmd_time, self->timer, (unsigned long long)self->bytes,
                        self->send_errors, sent_at, dgrams, arrivals, lags);
    if (out != NULL) {
        self->nlog = 0;
        self->bytes = 0;
        self->send_errors = 0;
        self->qn = 0;
        self->qlen = 0;
        self->urgent = 0;
        self->read_failed = 0;
    }
done:
    Py_XDECREF(nows);
    Py_XDECREF(times);
    Py_XDECREF(cmds);
    Py_XDECREF(dgrams);
    Py_XDECREF(arrivals);
    Py_XDECREF(lags);
    return out;
}

static PyObject *Pump_take(Pump *self, PyObject *unused)
{
    if (self->running) {
        PyErr_SetString(PyExc_RuntimeError, "Pump.take while it runs");
        return NULL;
    }
    return take_log(self);
}

static int pump_buffers(Pump *self)
{
    if (self->rbuf == NULL && (self->rbuf = PyMem_RawMalloc(PUMP_DATAGRAM)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (self->qbuf == NULL && (self->qbuf = PyMem_RawMalloc((size_t)PUMP_QUEUE * PUMP_DATAGRAM)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static int parse_batch(PyObject *o, double *out)
{
    if (o == NULL) {
        *out = 0.0;
        return 0;
    }
    if (parse_time(o, out) < 0)
        return -1;
    if (*out < 0.0 || *out > 1.0) {
        PyErr_SetString(PyExc_ValueError, "Pump: batch must be within 0..1 s");
        return -1;
    }
    return 0;
}

/* step(now, batch=0): for tests and a caller with its own clock: if the timer is due, the tick and
 * the reads of run(); returns PUMP_NOT_DUE, -1 (ticked) or why the core must come in (take()). */
static PyObject *Pump_step(Pump *self, PyObject *args)
{
    PyObject *o_now, *o_batch = NULL;
    double now, batch;
    if (!PyArg_ParseTuple(args, "O|O:step", &o_now, &o_batch))
        return NULL;
    if (parse_time(o_now, &now) < 0 || parse_batch(o_batch, &batch) < 0 || pump_usable(self) < 0
            || pump_buffers(self) < 0)
        return NULL;
    if (now < self->timer)
        return PyLong_FromLong(PUMP_NOT_DUE);
    self->batch = batch;
    return PyLong_FromLong(pump_step(self, now));
}

/* send_input(now, angles, buttons, forward, right, up, weapon, head): the frame thread's one call
 * per command tick (transport.Q3Client.send_input). The input from plain numbers, as
 * Q3ClientCore.set_input + wire_input would give it (angles (pitch, yaw, roll) in degrees, the
 * roll clamped to +-ROLL_CLAMP when `roll_clamp`, moves clamped to +-127, buttons & 0xFFF, weapon
 * & 0xFF; head: None, or the tracked head's (pitch, yaw[, roll]) in absolute degrees, packed into
 * the buttons as vrhead.pack_head(buttons, pitch, yaw_offset(yaw, view yaw), 0) does), then, if
 * the timer is due, step()'s tick and reads. Returns (bytes sent, sent_at, the next tick's time,
 * the cmd's server time, whether the core must come in: datagrams read or a read failed) when the
 * tick went out; else an int (NOT_DUE, PYTHON, LOG_FULL...), the input then left as it was.
 * take_input() hands the input given here to the core (None when set_input came later). */

static int fin_error;   /* f32's overflow flag (set with the GIL held: send_input only) */

static double f32(double x)   /* struct.pack('<f') then unpack: OverflowError when it overflows */
{
    float y = (float)x;
    if (isinf(y) && !isinf(x))
        fin_error = 1;
    return (double)y;
}

static double yaw_offset_f(double a1, double a2)   /* vrhead.yaw_offset (both finite) */
{
    double a = f32(f32(a1) - f32(a2));
    if (a > 1080.0 || a < -1080.0)
        a = f32(fmod(a, 360.0));
    while (a > 180.0)
        a = f32(a - 360.0);
    while (a < -180.0)
        a = f32(a + 360.0);
    return a;
}

static int64_t pack7_f(double deg, double limit)   /* vrhead.pack7 */
{
    double v = f32(deg);
    if (isnan(v))
        return 0;   /* only after an overflow fin_error already holds: no NaN-to-int cast (UB) */
    v = v < -limit ? -limit : v > limit ? limit : v;
    return (int64_t)f32(f32(f32(v + 90.0) * 127.0) / 180.0) & 0x7F;
}

static int64_t short_f(double x)   /* client._view_shorts: int(f32(f32(x) * 65536 / 360)), low bits kept */
{
    double s = f32(f32(x) * 65536.0 / 360.0);
    if (!isfinite(s))
        return 0;   /* an overflow: fin_error is set, send_input raises; no inf/NaN-to-int cast (UB) */
    if (s >= 4e18 || s <= -4e18)
        s = fmod(s, 65536.0);   /* an integer that large: exact, the same low 16 bits */
    return (int64_t)s;
}

static int move_arg(PyObject *o, int64_t *out)   /* max(-127, min(127, int(o))) */
{
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow)
        v = overflow > 0 ? 127 : -127;
    *out = v > 127 ? 127 : v < -127 ? -127 : v;
    return 0;
}

/* send_input's work once its arguments are read: the finiteness check, the input set, the tick
 * (send_tick). 1 when the tick went out (*why: pump_step's), 0 when it did not (*why: why; the
 * input then left as it was, nothing else changed), -1 on an error. `angles`, `head`: the Python
 * objects the numbers came from, for the error's text (NULL when the numbers are finite: unread). */
static int send_tick(Pump *self, double now, const double a[3], int has_head, double hp, double hy,
                     uint64_t buttons, const int64_t mv[3], uint64_t weapon, PyObject *angles, PyObject *head,
                     int *why)
{
    if (!(isfinite(a[0]) && isfinite(a[1]) && isfinite(a[2])) || (has_head && !(isfinite(hp) && isfinite(hy)))) {
        PyErr_Format(PyExc_ValueError, "non-finite angle in %R (head %R)", angles, head);
        return -1;
    }
    if (!self->configured || self->running || self->fd < 0) {
        *why = PUMP_PYTHON;
        return 0;
    }
    if (now < self->timer) {
        *why = PUMP_NOT_DUE;
        return 0;
    }
    if (pump_buffers(self) < 0)
        return -1;
    /* Q3ClientCore.set_input, then wire_input */
    double r = a[2];
    if (self->roll_clamp)
        r = r > 60.0 ? 60.0 : r < -60.0 ? -60.0 : r;   /* vrhead.ROLL_CLAMP */
    fin_error = 0;
    int64_t in[8], user = (int64_t)(buttons & USER_BUTTONS);
    in[0] = short_f(a[0]);
    in[1] = short_f(a[1]);
    in[2] = short_f(r);
    in[3] = mv[0];
    in[4] = mv[1];
    in[5] = mv[2];
    double offset = 0.0;
    in[6] = user;
    if (has_head) {
        offset = yaw_offset_f(hy, a[1]);   /* Q3Link: the tracked yaw as an offset from the view's */
        in[6] = user | pack7_f(hp, 80.0) << 12 | pack7_f(yaw_offset_f(offset, 0.0), 80.0) << 19;
    }
    in[7] = (int64_t)(weapon & 0xFF);
    if (fin_error) {
        PyErr_SetString(PyExc_OverflowError, "float too large to pack with f format");
        return -1;
    }
    int64_t saved[8];
    pthread_mutex_lock(&self->lock);
    memcpy(saved, self->input, sizeof saved);
    memcpy(self->input, in, sizeof in);
    pthread_mutex_unlock(&self->lock);
    int nlog = self->nlog;
    self->batch = 0.0;
    *why = pump_step(self, now);
    if (self->nlog == nlog) {   /* no tick: the input stays what it was (the caller's slow path sets it) */
        pthread_mutex_lock(&self->lock);
        memcpy(self->input, saved, sizeof saved);
        pthread_mutex_unlock(&self->lock);
        return 0;
    }
    self->fresh = 1;
    self->fresh_head = has_head;
    memcpy(self->fresh_angles, a, sizeof self->fresh_angles);
    self->fresh_head_pa[0] = hp;
    self->fresh_head_pa[1] = offset;
    self->fresh_moves[0] = mv[0];
    self->fresh_moves[1] = mv[1];
    self->fresh_moves[2] = mv[2];
    self->fresh_moves[3] = user;
    self->fresh_moves[4] = in[7];
    return 1;
}

static PyObject *Pump_send_input(Pump *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8) {
        PyErr_Format(PyExc_TypeError, "send_input takes 8 arguments (%zd given)", nargs);
        return NULL;
    }
    double now, a[3], hp = 0.0, hy = 0.0;
    if (parse_time(args[0], &now) < 0)
        return NULL;
    PyObject *angles = args[1], *head = args[7];
    if (!PyTuple_Check(angles) || PyTuple_GET_SIZE(angles) != 3) {
        PyErr_SetString(PyExc_TypeError, "send_input: angles must be a (pitch, yaw, roll) tuple");
        return NULL;
    }
    for (int i = 0; i < 3; i++) {
        a[i] = PyFloat_AsDouble(PyTuple_GET_ITEM(angles, i));
        if (a[i] == -1.0 && PyErr_Occurred())
            return NULL;
    }
    int has_head = head != Py_None;
    if (has_head) {
        if (!PyTuple_Check(head) || PyTuple_GET_SIZE(head) < 2) {
            PyErr_SetString(PyExc_TypeError, "send_input: head must be None or a (pitch, yaw[, roll]) tuple");
            return NULL;
        }
        hp = PyFloat_AsDouble(PyTuple_GET_ITEM(head, 0));
        if (hp == -1.0 && PyErr_Occurred())
            return NULL;
        hy = PyFloat_AsDouble(PyTuple_GET_ITEM(head, 1));
        if (hy == -1.0 && PyErr_Occurred())
            return NULL;
    }
    uint64_t buttons, weapon;
    int64_t mv[3];
    if (low64(args[2], &buttons) < 0 || move_arg(args[3], &mv[0]) < 0 || move_arg(args[4], &mv[1]) < 0
            || move_arg(args[5], &mv[2]) < 0 || low64(args[6], &weapon) < 0)
        return NULL;
    uint64_t bytes = self->bytes;
    int why, ticked = send_tick(self, now, a, has_head, hp, hy, buttons, mv, weapon, angles, head, &why);
    if (ticked < 0)
        return NULL;
    if (!ticked)
        return PyLong_FromLong(why);
    return Py_BuildValue("(KddLO)", (unsigned long long)(self->bytes - bytes), self->sent_at, self->timer,
                         (long long)self->last_cmd_time, why == PUMP_TICKED ? Py_False : Py_True);
}

/* ---- send_pose: the Q3 sink's whole command tick (app/sinks/q3/sink.py Q3Sink.send) in one call.
 *
 * From the frame's raw inputs it does what q3_intent (app/sinks/q3/mapping.py: RigState's
 * world_orientation, pose.quake_angles, the roll clamp, weapon_frame_moves), Q3Link.send and
 * send_input do: the same operations in the same order on doubles, so the same floats and the
 * same datagram (tests/q3/test_send_pose.py checks both against the Python path). The build
 * compiles this file with -ffp-contract=off (build_native.py): no fused multiply-adds. */

static const double deg_to_rad = Py_MATH_PI / 180.0;   /* CPython's math.radians */
static const double rad_to_deg = 180.0 / Py_MATH_PI;   /* CPython's math.degrees */

static double py_atan2(double y, double x)   /* CPython's math.atan2 (m_atan2), special cases first */
{
    if (isnan(x) || isnan(y))
        return Py_NAN;
    if (isinf(y)) {
        if (isinf(x))
            return copysign(copysign(1., x) == 1. ? 0.25 * Py_MATH_PI : 0.75 * Py_MATH_PI, y);
        return copysign(0.5 * Py_MATH_PI, y);
    }
    if (isinf(x) || y == 0.) {
        if (copysign(1., x) == 1.)
            return copysign(0., y);
        return copysign(Py_MATH_PI, y);
    }
    return atan2(y, x);
}

/* pose.quake_angles of (x, y, z, w), line by line (zero terms included: the same bits). */
static void quake_angles_c(double x, double y, double z, double w, double out[3])
{
    double qx, qy, qz, qw;
    double n = sqrt(x * x + y * y + z * z + w * w);
    if (!isfinite(n) || n == 0.0) {
        qx = 0.0, qy = 0.0, qz = 0.0, qw = 1.0;
    } else {
        qx = x / n, qy = y / n, qz = z / n, qw = w / n;
    }
    double tx = 2.0 * (qy * -1.0 - qz * 0.0);
    double ty = 2.0 * (qz * 0.0 - qx * -1.0);
    double tz = 2.0 * (qx * 0.0 - qy * 0.0);
    double fx = 0.0 + qw * tx + (qy * tz - qz * ty);
    double fy = 0.0 + qw * ty + (qz * tx - qx * tz);
    double fz = -1.0 + qw * tz + (qx * ty - qy * tx);
    double rtx = 2.0 * (qy * 0.0 - qz * 0.0);
    double rty = 2.0 * (qz * 1.0 - qx * 0.0);
    double rtz = 2.0 * (qx * 0.0 - qy * 1.0);
    double rx = 1.0 + qw * rtx + (qy * rtz - qz * rty);
    double rz = 0.0 + qw * rtz + (qx * rty - qy * rtx);
    double utx = 2.0 * (qy * 0.0 - qz * 1.0);
    double uty = 2.0 * (qz * 0.0 - qx * 0.0);
    double utz = 2.0 * (qx * 1.0 - qy * 0.0);
    double uy = 1.0 + qw * uty + (qz * utx - qx * utz);
    double fqx = -fz, fqy = -fx, fqz = fy;
    double rqx = -rz, rqy = -rx;
    double horiz = sqrt(fqx * fqx + fqy * fqy);
    out[0] = py_atan2(-fqz, horiz) * rad_to_deg;
    if (horiz < 1e-9) {   /* pose._GIMBAL_EPS */
        out[1] = py_atan2(rqx, -rqy) * rad_to_deg;
        out[2] = 0.0;
        return;
    }
    /* (the right vector's y, ry, is Quake's rqz: used only off the gimbal) */
    double ry = 0.0 + qw * rty + (qz * rtx - qx * rtz);
    out[1] = py_atan2(fqy, fqx) * rad_to_deg;
    out[2] = py_atan2(-ry, uy) * rad_to_deg;
}

/* A number argument as Python's float arithmetic would see it: 0, or 1 when it is neither a float
 * nor an int a double holds (the caller then leaves the tick to Python, which meets it there). */
static int num_arg(PyObject *o, double *out)
{
    if (PyFloat_CheckExact(o)) {
        *out = PyFloat_AS_DOUBLE(o);
        return 0;
    }
    if (PyLong_Check(o)) {
        *out = PyLong_AsDouble(o);
        if (*out == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return 1;
        }
        return 0;
    }
    return 1;
}

static PyObject *s_orientation, *s_orientation_valid;

/* RigState.world_orientation(pose) then quake_angles: 1 with the angles in out, 0 when the pose's
 * orientation is not valid, 2 when Python must do it (not a 4-tuple of numbers), -1 on an error. */
static int pose_angles(PyObject *pose, double cy, double sy, double out[3])
{
    PyObject *v = PyObject_GetAttr(pose, s_orientation_valid);
    if (v == NULL)
        return -1;
    int valid = PyObject_IsTrue(v);
    Py_DECREF(v);
    if (valid <= 0)
        return valid;
    PyObject *q = PyObject_GetAttr(pose, s_orientation);
    if (q == NULL)
        return -1;
    double c[4];
    int odd = !PyTuple_CheckExact(q) || PyTuple_GET_SIZE(q) != 4;
    for (int i = 0; !odd && i < 4; i++)
        odd = num_arg(PyTuple_GET_ITEM(q, i), &c[i]);
    Py_DECREF(q);
    if (odd)
        return 2;
    double qx = c[0], qy = c[1], qz = c[2], qw = c[3];
    quake_angles_c(cy * qx + sy * qz, cy * qy + sy * qw, cy * qz - sy * qx, cy * qw - sy * qy, out);
    return 1;
}

/* mapping.weapon_frame_moves' clamp(v): 0, or 1 when int(round(v * 127)) would raise. */
static int move_clamp(double v, int64_t *out)
{
    double m = v * 127.0;
    if (!isfinite(m))
        return 1;
    m = nearbyint(m);   /* round(): half to even, the default rounding mode's */
    *out = m > 127.0 ? 127 : m < -127.0 ? -127 : (int64_t)m;
    return 0;
}

/* app/sinks/q3/link.py SENT_LIMIT: the history's bound here. Dropping the oldest entry costs a scan
 * over the dict's deleted slots (~3 us cold per tick at 256 entries): the link trims the history
 * off the frame (Q3Link.poll), so this bound is met only when nothing polls. */
#define SENT_LIMIT 512

/* The intent of q3_intent from args (head, aim, cy, sy, yaw, trigger, jump, vx, vz, move_speed,
 * vr: see send_pose): the view angles, the tracked head (*has_head), the user buttons and the moves.
 * 0, 1 when Python must do it (an input not a float or an int, or one its code raises on: the
 * caller then runs q3_intent, which meets it as before), -1 on an error. */
static int pose_intent(PyObject *const *args, double a[3], double head[3], int *has_head, uint64_t *user,
                       int64_t mv[3])
{
    double cy, sy, trigger, vx, vz, speed, aim[3];
    if (num_arg(args[2], &cy) || num_arg(args[3], &sy) || !PyFloat_CheckExact(args[4])
            || num_arg(args[5], &trigger) || num_arg(args[7], &vx) || num_arg(args[8], &vz)
            || num_arg(args[9], &speed))
        return 1;   /* (a yaw that is not a float would be the intent's own object) */
    int jump = PyObject_IsTrue(args[6]), vr = PyObject_IsTrue(args[10]);
    if (jump < 0 || vr < 0)
        return -1;
    int h = pose_angles(args[0], cy, sy, head);
    if (h < 0 || h == 2)
        return h < 0 ? -1 : 1;
    int has_aim = pose_angles(args[1], cy, sy, aim);
    if (has_aim < 0 || has_aim == 2)
        return has_aim < 0 ? -1 : 1;
    *has_head = h;
    if (has_aim) {
        a[0] = aim[0], a[1] = aim[1];
    } else if (h) {   /* no right controller: aim where the head looks */
        a[0] = head[0], a[1] = head[1];
    } else {
        a[0] = 0.0, a[1] = PyFloat_AS_DOUBLE(args[4]);
    }
    *user = trigger >= 0.5 ? 1 : 0;   /* BUTTON_ATTACK past TRIGGER_PRESSED */
    if (vr && h) {
        double r = head[2] < 60.0 ? head[2] : 60.0;   /* vrhead.ROLL_CLAMP in q3_intent's order */
        a[2] = r > -60.0 ? r : -60.0;
    } else {
        a[2] = 0.0;
    }
    mv[0] = mv[1] = 0;
    mv[2] = jump ? 127 : 0;   /* MOVE_MAX */
    if ((vx != 0.0 || vz != 0.0) && !(speed <= 0.0)) {   /* weapon_frame_moves (a NaN speed: Python's error) */
        double y = a[1] * deg_to_rad;
        double fx = -sin(y), fz = -cos(y);
        double rx = cos(y), rz = -sin(y);
        double f = (vx * fx + vz * fz) / speed;
        double r = (vx * rx + vz * rz) / speed;
        if (move_clamp(f, &mv[0]) || move_clamp(r, &mv[1]))
            return 1;
    }
    return 0;
}

/* The intent's angles and head tuples (head: None when not tracked); 0, or -1 on an error. */
static int intent_tuples(const double a[3], const double head[3], int has_head, PyObject **angles, PyObject **ohead)
{
    *angles = Py_BuildValue("(ddd)", a[0], a[1], a[2]);
    if (*angles == NULL)
        return -1;
    *ohead = has_head ? Py_BuildValue("(ddd)", head[0], head[1], head[2]) : (Py_INCREF(Py_None), Py_None);
    if (*ohead == NULL) {
        Py_CLEAR(*angles);
        return -1;
    }
    return 0;
}

/* pose_intent(head, aim, cy, sy, yaw, trigger, jump, vx, vz, move_speed, vr): send_pose's intent
 * alone, (angles, head, user buttons, forward, right, up) or None when Python must do it (tests
 * hold it against q3_intent). */
static PyObject *native_pose_intent(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 11) {
        PyErr_Format(PyExc_TypeError, "pose_intent takes 11 arguments (%zd given)", nargs);
        return NULL;
    }
    double a[3], head[3] = {0.0, 0.0, 0.0};
    int has_head = 0;
    uint64_t user;
    int64_t mv[3];
    int r = pose_intent(args, a, head, &has_head, &user, mv);
    if (r < 0)
        return NULL;
    if (r)
        Py_RETURN_NONE;
    PyObject *angles, *ohead;
    if (intent_tuples(a, head, has_head, &angles, &ohead) < 0)
        return NULL;
    return Py_BuildValue("(NNKLLL)", angles, ohead, (unsigned long long)user, (long long)mv[0], (long long)mv[1],
                         (long long)mv[2]);
}

/* send_pose(now, head, aim, cy, sy, yaw, trigger, jump, vx, vz, move_speed, vr, history, delta):
 * head, aim: the frame's stage head and right-aim poses (their `orientation_valid` and
 * `orientation` are read); cy, sy: the rig's half-yaw cosine and sine (RigState.trig[4:6]); yaw:
 * the origin's yaw (the aim when neither pose is valid); trigger, jump: the right trigger and the
 * jump button; vx, vz: the rig's world move; move_speed, vr: the sink's. When the tick goes out its
 * cmd time maps to ((pitch, yaw, roll), delta) in the dict `history` (Q3Link's, its oldest entry
 * dropped past SENT_LIMIT). Returns (bytes sent, sent_at, the next tick's time, the cmd's server
 * time, attention, angles, head (pitch, yaw, roll) or None, user buttons, forward, right, up):
 * send_input's five, then the Q3Intent's fields but vr. Else an int, nothing changed: send_input's
 * NOT_DUE, PYTHON... (PYTHON too when pose_intent leaves the intent to Python: the caller then runs
 * q3_intent and Q3Link.send, which meet it as before). */
static PyObject *Pump_send_pose(Pump *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 14) {
        PyErr_Format(PyExc_TypeError, "send_pose takes 14 arguments (%zd given)", nargs);
        return NULL;
    }
    double now, a[3], head[3] = {0.0, 0.0, 0.0};
    if (parse_time(args[0], &now) < 0)
        return NULL;
    PyObject *history = args[12], *delta = args[13];
    if (!PyDict_CheckExact(history)) {
        PyErr_SetString(PyExc_TypeError, "send_pose: history must be a dict");
        return NULL;
    }
    int has_head = 0;
    uint64_t user;
    int64_t mv[3];
    int r = pose_intent(args + 1, a, head, &has_head, &user, mv);
    if (r < 0)
        return NULL;
    if (r)
        return PyLong_FromLong(PUMP_PYTHON);
    /* Q3Link.send -> send_input. The intent's tuples (the result's and the history's) are built
     * after the tick's datagram went out, and only when it did: before it, only the error of a
     * non-finite angle (send_tick's check) needs them. */
    PyObject *angles = NULL, *ohead = NULL;
    int finite = isfinite(a[0]) && isfinite(a[1]) && isfinite(a[2])
                 && (!has_head || (isfinite(head[0]) && isfinite(head[1])));
    if (!finite && intent_tuples(a, head, has_head, &angles, &ohead) < 0)
        return NULL;
    uint64_t bytes = self->bytes;
    int why, ticked = send_tick(self, now, a, has_head, head[0], head[1], user, mv, 0, angles, ohead, &why);
    PyObject *out = NULL, *key = NULL, *entry = NULL;
    if (ticked <= 0) {
        if (ticked == 0)
            out = PyLong_FromLong(why);
        goto done;
    }
    if (angles == NULL && intent_tuples(a, head, has_head, &angles, &ohead) < 0)
        goto done;
    key = PyLong_FromLongLong(self->last_cmd_time);
    entry = PyTuple_Pack(2, angles, delta);
    if (key == NULL || entry == NULL || PyDict_SetItem(history, key, entry) < 0)
        goto done;
    if (PyDict_GET_SIZE(history) > SENT_LIMIT) {   /* the oldest first: a dict keeps insertion order */
        Py_ssize_t pos = 0;
        PyObject *oldest, *value;
        if (PyDict_Next(history, &pos, &oldest, &value)) {
            Py_INCREF(oldest);
            int bad = PyDict_DelItem(history, oldest);
            Py_DECREF(oldest);
            if (bad < 0)
                goto done;
        }
    }
    out = Py_BuildValue("(KddLOOOKLLL)", (unsigned long long)(self->bytes - bytes), self->sent_at, self->timer,
                        (long long)self->last_cmd_time, why == PUMP_TICKED ? Py_False : Py_True, angles, ohead,
                        (unsigned long long)user, (long long)mv[0], (long long)mv[1], (long long)mv[2]);
done:
    Py_XDECREF(key);
    Py_XDECREF(entry);
    Py_XDECREF(angles);
    Py_XDECREF(ohead);
    return out;
}

/* take_input(): the input send_input last gave, as Q3ClientCore.set_input's arguments (angles,
 * forward, right, up, buttons, weapon, head as (pitch, yaw offset) or None), once; None when
 * there is none newer than the core's (set_input since). */
static PyObject *Pump_take_input(Pump *self, PyObject *unused)
{
    if (!self->fresh)
        Py_RETURN_NONE;
    self->fresh = 0;
    const double *a = self->fresh_angles;
    const int64_t *m = self->fresh_moves;
    if (self->fresh_head)
        return Py_BuildValue("((ddd)LLLLL(dd))", a[0], a[1], a[2], (long long)m[0], (long long)m[1],
                             (long long)m[2], (long long)m[3], (long long)m[4], self->fresh_head_pa[0],
                             self->fresh_head_pa[1]);
    return Py_BuildValue("((ddd)LLLLLO)", a[0], a[1], a[2], (long long)m[0], (long long)m[1], (long long)m[2],
                         (long long)m[3], (long long)m[4], Py_None);
}

/* pending: ticks, datagrams, snapshots decoded here or an input that the core has not taken over
 * yet (take, snap_take, take_input);
 * False while run() runs (its hand-overs are its own). */
static PyObject *Pump_get_pending(Pump *self, void *closure)
{
    return PyBool_FromLong(!self->running
                           && (self->nlog || self->qn || self->fresh || self->urgent || self->read_failed
                               || (self->snap != NULL && self->snap->nlog)));
}

static PyMemberDef Pump_members[] = {
    {"timer", T_DOUBLE, offsetof(Pump, timer), READONLY, "When the next tick is due (CLOCK_MONOTONIC)."},
    {"roll_clamp", T_INT, offsetof(Pump, roll_clamp), 0,
     "send_input clamps the roll to +-60 (Q3ClientCore.roll_clamped)."},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef Pump_getset[] = {
    {"pending", (getter)Pump_get_pending, NULL, "The core has something to take over.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

/* run(until, on_datagrams=None, batch=0): the loop (module comment above), on CLOCK_MONOTONIC
 * (time.monotonic and time.perf_counter on Linux). Server datagrams read at ticks wait here at
 * most `batch` seconds (and while fewer than PUMP_QUEUE); then, with on_datagrams, they go to
 * on_datagrams(take()), whose return is the next context for configure() (None: stop, returning
 * RUN_READABLE), and without it run() returns RUN_READABLE for the caller to take(). Returns why
 * it stopped (RUN_* in transport.py); datagrams still queued then are take()'s. */
static PyObject *Pump_run(Pump *self, PyObject *args)
{
    PyObject *o_until, *callback = Py_None, *o_batch = NULL;
    double until, batch;
    if (!PyArg_ParseTuple(args, "O|OO:run", &o_until, &callback, &o_batch))
        return NULL;
    if (parse_time(o_until, &until) < 0 || parse_batch(o_batch, &batch) < 0 || pump_usable(self) < 0
            || pump_buffers(self) < 0)
        return NULL;
    if (self->fd < 0) {
        PyErr_SetString(PyExc_RuntimeError, "Pump has no socket");
        return NULL;
    }
    self->batch = batch;
    int reason, failed = 0;
    self->running = 1;
    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        if (__atomic_exchange_n(&self->interrupt, 0, __ATOMIC_ACQ_REL)) {
            reason = PUMP_INTERRUPTED;
            break;
        }
        double now = mono_now();
        if (now >= until) {
            reason = PUMP_UNTIL;
            break;
        }
        if (now >= self->timer) {
            int r = pump_step(self, now);
            if (r == PUMP_TICKED)
                continue;
            if (r != PUMP_READABLE || callback == Py_None) {
                reason = r;
                break;
            }
            Py_BLOCK_THREADS
            self->running = 0;
            PyObject *taken = take_log(self), *ctx = NULL;
            ctx = taken == NULL ? NULL : PyObject_CallOneArg(callback, taken);
            Py_XDECREF(taken);
            reason = PUMP_TICKED;
            if (ctx == NULL) {
                failed = 1;
            } else if (ctx == Py_None) {
                reason = PUMP_READABLE;
            } else {
                PyObject *ok = Pump_configure(self, ctx);
                if (ok == NULL)
                    failed = 1;
                Py_XDECREF(ok);
            }
            Py_XDECREF(ctx);
            self->running = 1;
            Py_UNBLOCK_THREADS
            if (failed || reason != PUMP_TICKED) {
                if (failed)
                    reason = PUMP_PYTHON;
                break;
            }
            continue;
        }
        double wake = self->timer < until ? self->timer : until;
        struct timespec ts;
        ts.tv_sec = (time_t)wake;
        ts.tv_nsec = (long)((wake - (double)ts.tv_sec) * 1e9);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
    Py_END_ALLOW_THREADS
    self->running = 0;
    if (failed)
        return NULL;
    return PyLong_FromLong(reason);
}

static PyMethodDef Pump_methods[] = {
    {"configure", (PyCFunction)Pump_configure, METH_O, "The packet context (Q3ClientCore._pump_context)."},
    {"set_input", (PyCFunction)Pump_set_input, METH_VARARGS, "The next ticks' input (thread-safe)."},
    {"tick", (PyCFunction)Pump_tick, METH_O, "One tick at `now` if due; returns a RUN_* code or -1 (ticked)."},
    {"run", (PyCFunction)Pump_run, METH_VARARGS, "run(until, on_datagrams=None, batch=0): tick on the clock until `until`."},
    {"step", (PyCFunction)Pump_step, METH_VARARGS, "step(now, batch=0): run()'s tick and reads at `now`, if due."},
    {"interrupt", (PyCFunction)Pump_interrupt, METH_NOARGS, "Make a running run() return (thread-safe)."},
    {"take", (PyCFunction)Pump_take, METH_NOARGS, "The ticks since the last take and the state they left."},
    {"send_input", (PyCFunction)(void (*)(void))Pump_send_input, METH_FASTCALL,
     "send_input(now, angles, buttons, forward, right, up, weapon, head): the input, and the tick if due."},
    {"send_pose", (PyCFunction)(void (*)(void))Pump_send_pose, METH_FASTCALL,
     "send_pose(now, head, aim, cy, sy, yaw, trigger, jump, vx, vz, move_speed, vr, history, delta): "
     "the Q3 sink's command tick from the frame's poses (see Q3Sink.send)."},
    {"take_input", (PyCFunction)Pump_take_input, METH_NOARGS, "The input send_input gave, for the core; or None."},
    {"snap_reset", (PyCFunction)Pump_snap_reset, METH_VARARGS, "A gamestate's baselines (_q3snap.c)."},
    {"snap_enable", (PyCFunction)Pump_snap_enable, METH_VARARGS, "Consume in-game snapshots (_q3snap.c)."},
    {"snap_put", (PyCFunction)Pump_snap_put, METH_VARARGS, "A snapshot the core decoded, as a base."},
    {"snap_take", (PyCFunction)Pump_snap_take, METH_NOARGS, "The snapshots consumed since the last take."},
    {"snap_get", (PyCFunction)Pump_snap_get, METH_O, "A held snapshot with its entities, or None."},
    {"snap_parse", (PyCFunction)Pump_snap_parse, METH_VARARGS, "Decode one message body (tests)."},
    {"snap_parse_cmds", (PyCFunction)Pump_snap_parse_cmds, METH_VARARGS, "snap_parse, server commands first too."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PumpType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "headcast.netcode.q3._q3native.Pump",
    .tp_doc = "The in-game command tick in C (see transport.Q3Client.run).",
    .tp_basicsize = sizeof(Pump),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = Pump_new,
    .tp_init = (initproc)Pump_init,
    .tp_dealloc = (destructor)Pump_dealloc,
    .tp_methods = Pump_methods,
    .tp_members = Pump_members,
    .tp_getset = Pump_getset,
};

/* ------------------------------------------------------------------ module */

static PyMethodDef native_methods[] = {
    {"init", native_init, METH_VARARGS,
     "init(MsgError, STATIC_CODES, entity_widths, player_widths): tables and error type, once."},
    {"huffman_bits", native_huffman_bits, METH_O, "msg.py_huffman_bits (widths 0..64)."},
    {"write_client_message", (PyCFunction)(void (*)(void))native_client_message, METH_VARARGS | METH_KEYWORDS,
     "clientmsg.py_write_client_message."},
    {"client_datagram", native_client_datagram, METH_VARARGS,
     "write_client_message + the netchan's single-datagram transmit (see netchan.transmit_client_message)."},
    {"xor", native_xor, METH_VARARGS, "netchan._xor without a cache: xor(data, start, key, text)."},
    {"legacy_unscramble", native_legacy_unscramble, METH_VARARGS,
     "netchan._unscramble: legacy_unscramble(message, challenge ^ sequence, reliable_commands)."},
    {"read_longs", native_read_longs, METH_VARARGS, "netchan._ioq3_read_longs(data, start, count)."},
    {"pose_intent", (PyCFunction)(void (*)(void))native_pose_intent, METH_FASTCALL,
     "Pump.send_pose's intent alone (tests): (angles, head, user, forward, right, up) or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, "_q3native", "Quake 3 codec hot paths in C (see native.py).", -1, native_methods,
};

PyMODINIT_FUNC PyInit__q3native(void)
{
    if (PyType_Ready(&ReaderType) < 0 || PyType_Ready(&PumpType) < 0)
        return NULL;
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL
    INTERN(s_server_time, "server_time");
    INTERN(s_angles, "angles");
    INTERN(s_buttons, "buttons");
    INTERN(s_weapon, "weapon");
    INTERN(s_forwardmove, "forwardmove");
    INTERN(s_rightmove, "rightmove");
    INTERN(s_upmove, "upmove");
    INTERN(s_orientation, "orientation");
    INTERN(s_orientation_valid, "orientation_valid");
#undef INTERN
    PyObject *m = PyModule_Create(&native_module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&ReaderType);
    if (PyModule_AddObject(m, "BitReader", (PyObject *)&ReaderType) < 0) {
        Py_DECREF(&ReaderType);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&PumpType);
    if (PyModule_AddObject(m, "Pump", (PyObject *)&PumpType) < 0) {
        Py_DECREF(&PumpType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
