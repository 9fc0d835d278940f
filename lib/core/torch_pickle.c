/* A pickle machine for torch.save's state dicts (torch_pickle.h). Values
 * live in one growing table and are referred to by index, so the stack,
 * the memo and the containers share them as pickle does; nothing a pickle
 * names is ever looked up or called outside the allowed set. */
#include "core/torch_pickle.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"

#define MAX_PICKLE ((size_t)64 << 20)
#define MAX_MEMO ((size_t)1 << 20)
#define MAX_VALUES ((size_t)1 << 22)
#define NONE_IDX SIZE_MAX

typedef enum {
    V_MARK, V_NONE, V_BOOL, V_INT, V_FLOAT, V_STR, V_TUPLE, V_LIST, V_DICT, V_GLOBAL,
    V_STORAGE, V_TENSOR
} vkind;

static const char *const kind_names[] = {"mark", "None", "bool", "int", "float", "str",
                                         "tuple", "list", "dict", "global", "storage",
                                         "tensor"};

/* The globals a state dict's pickle may name, and what each is. */
typedef enum {
    G_ORDERED_DICT, G_REBUILD_TENSOR, G_REBUILD_PARAMETER, G_FLOAT, G_HALF, G_BFLOAT16
} global;

static const struct {
    const char *module, *name;
} globals[] = {
    {"collections", "OrderedDict"}, {"torch._utils", "_rebuild_tensor_v2"},
    {"torch._utils", "_rebuild_parameter"}, {"torch", "FloatStorage"},
    {"torch", "HalfStorage"}, {"torch", "BFloat16Storage"},
};

typedef struct val {
    vkind kind;
    int64_t i;        /* BOOL, INT; GLOBAL: a global */
    char *s;          /* STR, NUL-terminated copy */
    size_t *items;    /* TUPLE, LIST; DICT: key, value, key, value ... */
    size_t n, cap;
    size_t view;      /* STORAGE, TENSOR: its entry of vm.views */
} val;

typedef struct vm {
    const unsigned char *p, *end, *start;
    const char *what;
    val *vals;
    size_t nvals, capvals;
    size_t *stack, depth, capstack;
    size_t *memo, capmemo, nmemo;
    /* STORAGE: dtype, storage (key), storage_numel; TENSOR: all fields */
    ct__torch_tensor *views;
    size_t nviews, capviews;
} vm;

static ct_status bad(const vm *m, const char *fmt, const char *detail)
{
    return ct__error(CT_ERR_FORMAT, "%s: pickle byte %zu: %s%s", m->what,
                     (size_t)(m->p - m->start), fmt, detail ? detail : "");
}

static int grow(void **buf, size_t *cap, size_t need, size_t size)
{
    size_t n = *cap ? *cap : 16;
    void *p;
    if (need <= *cap)
        return 1;
    while (n < need)
        n *= 2;
    if (!(p = realloc(*buf, n * size)))
        return 0;
    *buf = p;
    *cap = n;
    return 1;
}

/* A new value of `kind`; its index, or NONE_IDX when out of memory. */
static size_t new_val(vm *m, vkind kind)
{
    if (m->nvals >= MAX_VALUES ||
        !grow((void **)&m->vals, &m->capvals, m->nvals + 1, sizeof *m->vals))
        return NONE_IDX;
    memset(&m->vals[m->nvals], 0, sizeof *m->vals);
    m->vals[m->nvals].kind = kind;
    return m->nvals++;
}

/* A value for a view: kind STORAGE or TENSOR with its entry in views. */
static size_t new_view(vm *m, vkind kind, const ct__torch_tensor *t)
{
    size_t v;
    if (!grow((void **)&m->views, &m->capviews, m->nviews + 1, sizeof *m->views) ||
        (v = new_val(m, kind)) == NONE_IDX)
        return NONE_IDX;
    m->views[m->nviews] = *t;
    m->vals[v].view = m->nviews++;
    return v;
}

static ct_status push(vm *m, size_t v)
{
    if (v == NONE_IDX && m->nvals >= MAX_VALUES)
        return ct__error(CT_ERR_FORMAT, "%s: the pickle makes more than 2^22 values", m->what);
    if (v == NONE_IDX || !grow((void **)&m->stack, &m->capstack, m->depth + 1, sizeof *m->stack))
        return ct__error(CT_ERR_NOMEM, "%s: out of memory reading the pickle", m->what);
    m->stack[m->depth++] = v;
    return CT_OK;
}

static ct_status pop(vm *m, size_t *v)
{
    if (m->depth == 0 || m->vals[m->stack[m->depth - 1]].kind == V_MARK)
        return bad(m, "the stack is empty", NULL);
    *v = m->stack[--m->depth];
    return CT_OK;
}

/* Bytes the opcode takes after itself; NULL when the pickle ends first. */
static const unsigned char *take(vm *m, size_t n)
{
    const unsigned char *at = m->p;
    if ((size_t)(m->end - m->p) < n)
        return NULL;
    m->p += n;
    return at;
}

static uint64_t le(const unsigned char *b, size_t n)
{
    uint64_t x = 0;
    for (size_t i = n; i-- > 0;)
        x = x << 8 | b[i];
    return x;
}

static ct_status add_item(vm *m, size_t c, size_t v)
{
    val *x = &m->vals[c];
    if (!grow((void **)&x->items, &x->cap, x->n + 1, sizeof *x->items))
        return ct__error(CT_ERR_NOMEM, "%s: out of memory reading the pickle", m->what);
    x->items[x->n++] = v;
    return CT_OK;
}

/* The values above the topmost mark, removed with it, into a new
 * container of `kind` (or appended to the container below the mark). */
static ct_status collect(vm *m, vkind kind, size_t into)
{
    size_t mark = m->depth, c = into;
    ct_status st;
    while (mark > 0 && m->vals[m->stack[mark - 1]].kind != V_MARK)
        mark--;
    if (mark == 0)
        return bad(m, "no MARK on the stack", NULL);
    if (c == NONE_IDX && (c = new_val(m, kind)) == NONE_IDX)
        return ct__error(CT_ERR_NOMEM, "%s: out of memory reading the pickle", m->what);
    for (size_t i = mark; i < m->depth; i++)
        if ((st = add_item(m, c, m->stack[i])) != CT_OK)
            return st;
    m->depth = mark - 1;
    return into == NONE_IDX ? push(m, c) : CT_OK;
}

static ct_status tuple_of(vm *m, size_t count)
{
    size_t c;
    ct_status st;
    if (m->depth < count)
        return bad(m, "the stack is too shallow for a tuple", NULL);
    for (size_t i = m->depth - count; i < m->depth; i++)
        if (m->vals[m->stack[i]].kind == V_MARK)
            return bad(m, "a MARK inside a tuple", NULL);
    if ((c = new_val(m, V_TUPLE)) == NONE_IDX)
        return ct__error(CT_ERR_NOMEM, "%s: out of memory reading the pickle", m->what);
    for (size_t i = m->depth - count; i < m->depth; i++)
        if ((st = add_item(m, c, m->stack[i])) != CT_OK)
            return st;
    m->depth -= count;
    return push(m, c);
}

static ct_status string(vm *m, const unsigned char *s, size_t n)
{
    const char *why = NULL;
    size_t v;
    if (ct__utf8_valid_prefix((const char *)s, n, &why) != n)
        return bad(m, "a string that is not UTF-8: ", why);
    if ((v = new_val(m, V_STR)) == NONE_IDX || !(m->vals[v].s = malloc(n + 1)))
        return ct__error(CT_ERR_NOMEM, "%s: out of memory reading the pickle", m->what);
    memcpy(m->vals[v].s, s, n);
    m->vals[v].s[n] = '\0';
    m->vals[v].i = (int64_t)n;
    return push(m, v);
}

static ct_status integer(vm *m, int64_t x, vkind kind)
{
    size_t v = new_val(m, kind);
    if (v != NONE_IDX)
        m->vals[v].i = x;
    return push(m, v);
}

/* GLOBAL / STACK_GLOBAL: only the allowed ones, refused by name otherwise. */
static ct_status name_global(vm *m, const char *module, const char *name)
{
    size_t v;
    for (size_t g = 0; g < sizeof globals / sizeof *globals; g++)
        if (!strcmp(module, globals[g].module) && !strcmp(name, globals[g].name)) {
            if ((v = new_val(m, V_GLOBAL)) != NONE_IDX)
                m->vals[v].i = (int64_t)g;
            return push(m, v);
        }
    if (!strcmp(module, "torch") && strlen(name) > 7 && !strcmp(name + strlen(name) - 7, "Storage"))
        return ct__error(CT_ERR_FORMAT, "%s: pickle byte %zu: torch.%s: only F32, F16 and BF16 "
                                        "tensors (FloatStorage, HalfStorage, BFloat16Storage) "
                                        "are read", m->what, (size_t)(m->p - m->start), name);
    return ct__error(CT_ERR_FORMAT, "%s: pickle byte %zu: the global %.100s.%.100s is refused: "
                                    "a state dict names only collections.OrderedDict, "
                                    "torch._utils' tensor rebuilds and tensor storages, and "
                                    "nothing in the pickle is run",
                     m->what, (size_t)(m->p - m->start), module, name);
}

static ct_status op_global(vm *m)
{
    const unsigned char *nl1, *nl2, *start = m->p;
    char module[256], name[256];
    if (!(nl1 = memchr(start, '\n', (size_t)(m->end - start))) ||
        !(nl2 = memchr(nl1 + 1, '\n', (size_t)(m->end - nl1 - 1))) || nl1 - start >= 256 ||
        nl2 - nl1 - 1 >= 256)
        return bad(m, "a GLOBAL without two short lines", NULL);
    memcpy(module, start, (size_t)(nl1 - start));
    module[nl1 - start] = '\0';
    memcpy(name, nl1 + 1, (size_t)(nl2 - nl1 - 1));
    name[nl2 - nl1 - 1] = '\0';
    m->p = nl2 + 1;
    return name_global(m, module, name);
}

static int is(const vm *m, size_t v, vkind kind)
{
    return m->vals[v].kind == kind;
}

static int is_global(const vm *m, size_t v, global g)
{
    return is(m, v, V_GLOBAL) && m->vals[v].i == (int64_t)g;
}

/* BINPERSID: ('storage', <storage type>, key, location, numel). */
static ct_status persistent(vm *m)
{
    static const ct__st_dtype dtypes[] = {CT_ST_F32, CT_ST_F16, CT_ST_BF16};
    size_t pid, v;
    const val *t;
    ct_status st;
    if ((st = pop(m, &pid)) != CT_OK)
        return st;
    t = &m->vals[pid];
    if (!is(m, pid, V_TUPLE) || t->n != 5 || !is(m, t->items[0], V_STR) ||
        strcmp(m->vals[t->items[0]].s, "storage") != 0 || !is(m, t->items[1], V_GLOBAL) ||
        m->vals[t->items[1]].i < G_FLOAT || !is(m, t->items[2], V_STR) ||
        !is(m, t->items[3], V_STR) || !is(m, t->items[4], V_INT) || m->vals[t->items[4]].i < 0)
        return bad(m, "a persistent id that is not ('storage', <F32, F16 or BF16 storage>, key, "
                      "location, size)", NULL);
    {
        ct__torch_tensor st_view = {0};
        st_view.dtype = dtypes[m->vals[t->items[1]].i - G_FLOAT];
        st_view.storage = m->vals[t->items[2]].s;
        st_view.storage_numel = (size_t)m->vals[t->items[4]].i;
        v = new_view(m, V_STORAGE, &st_view);
    }
    return push(m, v);
}

/* A tuple of non-negative ints, at most CT__TORCH_MAX_DIMS, into out. */
static int dims_of(const vm *m, size_t v, size_t *out, size_t *n)
{
    const val *t = &m->vals[v];
    if (!is(m, v, V_TUPLE) || t->n > CT__TORCH_MAX_DIMS)
        return 0;
    for (size_t i = 0; i < t->n; i++) {
        if (!is(m, t->items[i], V_INT) || m->vals[t->items[i]].i < 0)
            return 0;
        out[i] = (size_t)m->vals[t->items[i]].i;
    }
    *n = t->n;
    return 1;
}

/* _rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
 * backward_hooks[, metadata]): a view that must lie inside the storage. */
static ct_status rebuild_tensor(vm *m, size_t args)
{
    const val *a = &m->vals[args];
    ct__torch_tensor t;
    size_t nstride = 0, last = 0, v, empty = 0;
    if (!is(m, args, V_TUPLE) || (a->n != 6 && a->n != 7) || !is(m, a->items[0], V_STORAGE) ||
        !is(m, a->items[1], V_INT) || m->vals[a->items[1]].i < 0)
        return bad(m, "_rebuild_tensor_v2 called without (storage, offset, size, stride, "
                      "requires_grad, hooks)", NULL);
    t = m->views[m->vals[a->items[0]].view];
    t.offset = (size_t)m->vals[a->items[1]].i;
    if (!dims_of(m, a->items[2], t.shape, &t.ndim) || !dims_of(m, a->items[3], t.stride, &nstride) ||
        nstride != t.ndim)
        return bad(m, "a tensor's size and stride are not tuples of as many ints (at most 8)",
                   NULL);
    for (size_t d = 0; d < t.ndim; d++) {
        size_t step;
        empty |= t.shape[d] == 0;
        if (t.shape[d] && (__builtin_mul_overflow(t.shape[d] - 1, t.stride[d], &step) ||
                           __builtin_add_overflow(last, step, &last)))
            return bad(m, "a tensor's extent overflows", NULL);
    }
    if (!empty && (__builtin_add_overflow(last, t.offset, &last) || last >= t.storage_numel))
        return bad(m, "a tensor reaches past the end of its storage", NULL);
    v = new_view(m, V_TENSOR, &t);
    return push(m, v);
}

static ct_status reduce(vm *m)
{
    size_t args, fn, v;
    ct_status st;
    if ((st = pop(m, &args)) != CT_OK || (st = pop(m, &fn)) != CT_OK)
        return st;
    if (is_global(m, fn, G_ORDERED_DICT)) {
        if (!is(m, args, V_TUPLE) || m->vals[args].n != 0)
            return bad(m, "OrderedDict called with arguments", NULL);
        return push(m, new_val(m, V_DICT));
    }
    if (is_global(m, fn, G_REBUILD_TENSOR))
        return rebuild_tensor(m, args);
    if (is_global(m, fn, G_REBUILD_PARAMETER)) { /* (data, requires_grad, hooks) */
        if (!is(m, args, V_TUPLE) || m->vals[args].n != 3 ||
            !is(m, v = m->vals[args].items[0], V_TENSOR))
            return bad(m, "_rebuild_parameter called without (tensor, requires_grad, hooks)",
                       NULL);
        return push(m, v);
    }
    if (is(m, fn, V_GLOBAL))
        return ct__error(CT_ERR_FORMAT, "%s: pickle byte %zu: REDUCE of %s.%s is refused (only "
                                        "OrderedDict() and the tensor rebuilds are called)",
                         m->what, (size_t)(m->p - m->start), globals[m->vals[fn].i].module,
                         globals[m->vals[fn].i].name);
    return bad(m, "REDUCE of a ", kind_names[m->vals[fn].kind]);
}

static ct_status setitems(vm *m, int many)
{
    size_t mark = m->depth, dict;
    ct_status st;
    if (!many) {
        if (m->depth < 3)
            return bad(m, "SETITEM on a shallow stack", NULL);
        mark = m->depth - 2;
    } else {
        while (mark > 0 && m->vals[m->stack[mark - 1]].kind != V_MARK)
            mark--;
        if (mark < 2 || (m->depth - mark) % 2)
            return bad(m, "SETITEMS without a MARK and key, value pairs", NULL);
    }
    dict = m->stack[mark - 1 - (size_t)many];
    if (!is(m, dict, V_DICT))
        return bad(m, "SETITEM on a ", kind_names[m->vals[dict].kind]);
    for (size_t i = mark; i < m->depth; i++) {
        if (m->vals[m->stack[i]].kind == V_MARK)
            return bad(m, "a MARK among dict items", NULL);
        if ((st = add_item(m, dict, m->stack[i])) != CT_OK)
            return st;
    }
    m->depth = mark - (size_t)many;
    return CT_OK;
}

static ct_status memo_put(vm *m, uint64_t at)
{
    size_t old = m->capmemo;
    if (m->depth == 0 || at >= MAX_MEMO)
        return bad(m, "a memo index past 2^20, or nothing to store", NULL);
    if (!grow((void **)&m->memo, &m->capmemo, (size_t)at + 1, sizeof *m->memo))
        return ct__error(CT_ERR_NOMEM, "%s: out of memory reading the pickle", m->what);
    for (size_t i = old; i < m->capmemo; i++)
        m->memo[i] = NONE_IDX;
    m->nmemo += m->memo[at] == NONE_IDX;
    m->memo[at] = m->stack[m->depth - 1];
    return CT_OK;
}

static ct_status memo_get(vm *m, uint64_t at)
{
    if (at >= m->capmemo || m->memo[at] == NONE_IDX)
        return bad(m, "a memo index that was never stored", NULL);
    return push(m, m->memo[at]);
}

/* One opcode; *done at STOP. */
static ct_status step(vm *m, int *done)
{
    const unsigned char *b;
    size_t v;
    ct_status st;
    int op = *m->p++;
#define NEED(n) \
    if (!(b = take(m, (n)))) \
        return bad(m, "the pickle ends inside an opcode", NULL);
    switch (op) {
    case 0x80: NEED(1); return b[0] >= 2 && b[0] <= 5 ? CT_OK : bad(m, "a protocol not 2 to 5", NULL);
    case 0x95: NEED(8); return CT_OK; /* FRAME: a hint for readers of streams */
    case '.': *done = 1; return CT_OK;
    case '(': return push(m, new_val(m, V_MARK));
    case ')': return tuple_of(m, 0);
    case 0x85: return tuple_of(m, 1);
    case 0x86: return tuple_of(m, 2);
    case 0x87: return tuple_of(m, 3);
    case 't': return collect(m, V_TUPLE, NONE_IDX);
    case ']': return push(m, new_val(m, V_LIST));
    case '}': return push(m, new_val(m, V_DICT));
    case 'a':
        if ((st = pop(m, &v)) != CT_OK)
            return st;
        if (m->depth == 0 || !is(m, m->stack[m->depth - 1], V_LIST))
            return bad(m, "APPEND to something not a list", NULL);
        return add_item(m, m->stack[m->depth - 1], v);
    case 'e': {
        size_t mark = m->depth;
        while (mark > 0 && m->vals[m->stack[mark - 1]].kind != V_MARK)
            mark--;
        if (mark < 2 || !is(m, m->stack[mark - 2], V_LIST))
            return bad(m, "APPENDS without a list and a MARK", NULL);
        return collect(m, V_LIST, m->stack[mark - 2]);
    }
    case 's': return setitems(m, 0);
    case 'u': return setitems(m, 1);
    case 'N': return push(m, new_val(m, V_NONE));
    case 0x88: return integer(m, 1, V_BOOL);
    case 0x89: return integer(m, 0, V_BOOL);
    case 'K': NEED(1); return integer(m, b[0], V_INT);
    case 'M': NEED(2); return integer(m, (int64_t)le(b, 2), V_INT);
    case 'J': NEED(4); return integer(m, (int32_t)(uint32_t)le(b, 4), V_INT);
    case 0x8a: { /* LONG1: n little-endian two's complement bytes */
        uint64_t x;
        NEED(1);
        if (b[0] > 8)
            return bad(m, "an integer wider than 64 bits", NULL);
        v = b[0];
        NEED(v);
        x = le(b, v);
        if (v && v < 8 && (b[v - 1] & 0x80))
            x |= ~(uint64_t)0 << (8 * v);
        return integer(m, (int64_t)x, V_INT);
    }
    case 'G': /* BINFLOAT: big-endian double (read, not used) */
        NEED(8);
        return push(m, new_val(m, V_FLOAT));
    case 'X': NEED(4); v = (size_t)le(b, 4); NEED(v); return string(m, b, v);
    case 0x8c: NEED(1); v = b[0]; NEED(v); return string(m, b, v);
    case 0x8d: {
        uint64_t n;
        NEED(8);
        if ((n = le(b, 8)) > (uint64_t)(m->end - m->p))
            return bad(m, "the pickle ends inside an opcode", NULL);
        NEED((size_t)n);
        return string(m, b, (size_t)n);
    }
    case 'q': NEED(1); return memo_put(m, b[0]);
    case 'r': NEED(4); return memo_put(m, le(b, 4));
    case 0x94: return memo_put(m, m->nmemo); /* MEMOIZE: at the memo's size */
    case 'h': NEED(1); return memo_get(m, b[0]);
    case 'j': NEED(4); return memo_get(m, le(b, 4));
    case 'c': return op_global(m);
    case 0x93: { /* STACK_GLOBAL: module, name from the stack */
        size_t mod, name;
        if ((st = pop(m, &name)) != CT_OK || (st = pop(m, &mod)) != CT_OK)
            return st;
        if (!is(m, mod, V_STR) || !is(m, name, V_STR))
            return bad(m, "STACK_GLOBAL of values that are not strings", NULL);
        return name_global(m, m->vals[mod].s, m->vals[name].s);
    }
    case 'R': return reduce(m);
    case 'Q': return persistent(m);
    case 'b': /* BUILD: a dict's attributes (a state dict's _metadata), ignored */
        if ((st = pop(m, &v)) != CT_OK)
            return st;
        if (m->depth == 0 || !is(m, m->stack[m->depth - 1], V_DICT))
            return bad(m, "BUILD of something not a dict", NULL);
        return CT_OK;
    default: {
        char text[64];
        m->p--;
        snprintf(text, sizeof text, "0x%02x", op);
        return bad(m, "an opcode torch.save does not write for a state dict: ", text);
    }
    }
#undef NEED
}

/* The result: a dict of str -> tensor, copied out with its strings. */
static ct_status extract(vm *m, size_t dict, ct__torch_dict *out)
{
    const val *d = &m->vals[dict];
    size_t bytes = 0, n = d->n / 2;
    char *s;
    for (size_t i = 0; i < n; i++) {
        size_t k = d->items[2 * i], v = d->items[2 * i + 1];
        if (!is(m, k, V_STR))
            return ct__error(CT_ERR_FORMAT, "%s: a state dict key is a %s, not a string",
                             m->what, kind_names[m->vals[k].kind]);
        if (!is(m, v, V_TENSOR))
            return ct__error(CT_ERR_FORMAT, "%s: state dict entry '%.200s' is a %s, not a tensor",
                             m->what, m->vals[k].s, kind_names[m->vals[v].kind]);
        bytes += strlen(m->vals[k].s) + strlen(m->views[m->vals[v].view].storage) + 2;
    }
    out->tensors = calloc(n ? n : 1, sizeof *out->tensors);
    out->strings = s = malloc(bytes ? bytes : 1);
    if (!out->tensors || !s)
        return ct__error(CT_ERR_NOMEM, "%s: out of memory for %zu tensors", m->what, n);
    for (size_t i = 0; i < n; i++) {
        const char *name = m->vals[d->items[2 * i]].s;
        ct__torch_tensor *t = &out->tensors[i];
        *t = m->views[m->vals[d->items[2 * i + 1]].view];
        t->name = strcpy(s, name);
        s += strlen(name) + 1;
        t->storage = strcpy(s, t->storage);
        s += strlen(s) + 1;
    }
    out->n = n;
    return CT_OK;
}

ct_status ct__torch_unpickle(const unsigned char *p, size_t len, const char *what,
                             ct__torch_dict *out)
{
    vm m;
    ct_status st = CT_OK;
    int done = 0;
    memset(out, 0, sizeof *out);
    memset(&m, 0, sizeof m);
    if (len > MAX_PICKLE)
        return ct__error(CT_ERR_FORMAT, "%s: a pickle of %zu bytes (at most 64 MiB are read)",
                         what, len);
    m.p = m.start = p;
    m.end = p + len;
    m.what = what;
    while (st == CT_OK && !done) {
        if (m.p == m.end)
            st = bad(&m, "the pickle ends without STOP", NULL);
        else
            st = step(&m, &done);
    }
    if (st == CT_OK && (m.depth != 1 || !is(&m, m.stack[0], V_DICT)))
        st = ct__error(CT_ERR_FORMAT, "%s: the pickle holds %s, not a state dict", what,
                       m.depth == 1 ? kind_names[m.vals[m.stack[0]].kind] : "several values");
    if (st == CT_OK && m.p != m.end)
        st = ct__error(CT_ERR_FORMAT, "%s: %zu bytes after the pickle's STOP", what,
                       (size_t)(m.end - m.p));
    if (st == CT_OK)
        st = extract(&m, m.stack[0], out);
    for (size_t i = 0; i < m.nvals; i++) {
        free(m.vals[i].s);
        free(m.vals[i].items);
    }
    free(m.vals);
    free(m.stack);
    free(m.memo);
    free(m.views);
    if (st != CT_OK)
        ct__torch_dict_free(out);
    return st;
}

void ct__torch_dict_free(ct__torch_dict *d)
{
    if (!d)
        return;
    free(d->tensors);
    free(d->strings);
    memset(d, 0, sizeof *d);
}
