/*
 * fakedcgm: a stand-in for libdcgm.so.4 that lets tests run the real go-dcgm
 * bindings without a GPU or a hostengine.
 *
 * It implements the DCGM entry points go-dcgm calls on the paths
 * gpu-exporter uses, against the bundled go-dcgm headers, so struct layouts
 * and versions are checked the same way the real library checks them.
 *
 * State comes from the file named by FAKEDCGM_STATE. The file is re-read on
 * every call (when its content changed), so a test can change the fake
 * hostengine between two collections. One directive per line, '#' starts a
 * comment, values with spaces are double-quoted:
 *
 *   down                          hostengine unreachable: connects fail and
 *                                 an open connection becomes invalid (it stays
 *                                 invalid after "down" is removed, until the
 *                                 client reconnects)
 *   driver <version>
 *   gpu <id> uuid=<s> name=<s> bus=<s> minor=<n> fb=<MiB>
 *            [status=ok|lost|inaccessible] [listed=1]
 *            [prof=<fieldId>,<fieldId>...]
 *                                 a GPU; a GPU that is not ok is left out of
 *                                 the supported devices unless listed=1;
 *                                 without prof= profiling is not supported
 *   gi <entityId> gpu=<id> instance=<n> profile=<s> profileid=<n> slices=<n>
 *            uuid=<s> fb=<MiB>    a MIG GPU instance
 *   ci <entityId> gi=<entityId> instance=<n> uuid=<s>
 *                                 a MIG compute instance
 *   value <gpu|gi|ci> <entityId> <fieldId> <typed>
 *                                 typed: i:<int> d:<float> s:<string>
 *                                 i:blank|notfound|notsupported|notperm (int64
 *                                 sentinels), i32:<same> (int32 sentinels in an
 *                                 int64 field), d:<same>, s:<same>,
 *                                 status:<dcgm code> (per-value error)
 *   xid <gpuId> <code> <timestamp usec>
 *                                 an XID event; the latest one is also the
 *                                 value of field 230
 *   health <gpuId> <system mask> <result 0|10|20> <code> <message>
 *   fail <function|*> <dcgm code> [n=<count>]
 *                                 make a function return an error (the first
 *                                 <count> calls after the file changed, or all);
 *                                 the function "dcgmWatchFields.profiling"
 *                                 fails only watches of profiling fields
 *   hang <function|*> <ms> [n=<count>]
 *                                 make a function block for <ms> before doing
 *                                 its work; the block ends early when the
 *                                 state file changes
 *
 * Fields are only returned for (entity, field) pairs some watch covers, unless
 * the caller asks for live data, like the real hostengine; a reconnect drops
 * all groups and watches.
 *
 * After every call the fake rewrites a calls file (FAKEDCGM_CALLS, default
 * <FAKEDCGM_STATE>.calls) with one "<function> <count>" line per entry point
 * called, plus "sessions", "active_groups", "active_field_groups",
 * "active_watches", "in_flight" (calls now blocked by hang), "connect" (the
 * last remote address and its unix-socket flag) and one "watch" line per
 * active watch. Counts start from zero whenever FAKEDCGM_STATE names a new
 * file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dcgm_agent.h"
#include "dcgm_structs.h"
#include "dcgm_fields.h"

#define API __attribute__((visibility("default")))

#define MAX_GPUS 32
#define MAX_GIS 256
#define MAX_CIS 256
#define MAX_VALUES 4096
#define MAX_XIDS 1024
#define MAX_HEALTH 256
#define MAX_FAULTS 64
#define MAX_PROF 64
#define MAX_GROUPS 256
#define MAX_GROUP_ENTITIES 2048
#define MAX_FIELD_GROUPS 256
#define MAX_WATCHES 512
#define MAX_COUNTERS 64
#define STR 256

#define FIELD_XID 230
#define PROF_FIRST 1001
#define PROF_LAST 1099

enum status { ST_OK, ST_LOST, ST_INACCESSIBLE };

struct gpu {
    int id;
    char uuid[STR], name[STR], bus[STR];
    long long minor, fb;
    enum status status;
    int nprof;
    int prof[MAX_PROF];
    int has_prof;
    int listed; /* still among the supported devices when not ok */
};

struct gi {
    int id, gpu, instance, profileid, slices;
    char profile[STR], uuid[STR];
    long long fb;
};

struct ci {
    int id, gi, instance;
    char uuid[STR];
};

struct value {
    int group, entity, field;
    char type;   /* DCGM_FT_* */
    int status;  /* DCGM_ST_* for the value */
    long long i; /* int64 payload */
    double d;    /* double payload */
    char s[STR]; /* string payload */
    long long ts; /* 0 = time of the call */
};

struct xid {
    int gpu;
    long long code, ts;
};

struct health {
    int gpu;
    unsigned int system, result, code;
    char msg[STR];
};

struct fault {
    char fn[64];
    int code;     /* fail: code; hang: 0 */
    long long ms; /* hang: duration */
    int limit;    /* 0 = every call */
    int used;
};

struct state {
    int down;
    char driver[STR];
    int ngpus, ngis, ncis, nvalues, nxids, nhealth, nfaults;
    struct gpu gpus[MAX_GPUS];
    struct gi gis[MAX_GIS];
    struct ci cis[MAX_CIS];
    struct value values[MAX_VALUES];
    struct xid xids[MAX_XIDS];
    struct health health[MAX_HEALTH];
    struct fault faults[MAX_FAULTS];
};

struct group {
    int used;
    int nentities;
    dcgmGroupEntityPair_t entities[MAX_GROUP_ENTITIES];
    unsigned int health;
};

struct field_group {
    int used;
    int nfields;
    unsigned short fields[DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP];
};

struct watch {
    int used;
    uintptr_t group, field_group;
    long long freq;
    double keep_age;
    int keep_samples;
};

struct counter {
    const char *fn;
    long long n;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct state st;
static char *raw;            /* last state file content */
static size_t raw_len;
static int initialized;
static uintptr_t session;    /* current handle, 0 = none */
static int session_valid;
static long long sessions;
static int in_flight;
static char connect_addr[STR];
static int connect_unix = -1;
static struct group groups[MAX_GROUPS];
static struct field_group field_groups[MAX_FIELD_GROUPS];
static struct watch watches[MAX_WATCHES];
static struct counter counters[MAX_COUNTERS];
static int ncounters;

/* ---- state file ---------------------------------------------------------- */

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        fclose(f);
        return NULL;
    }
    for (;;) {
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (n < cap)
            break;
        cap *= 2;
        char *nb = realloc(buf, cap + 1);
        if (!nb) {
            free(buf);
            fclose(f);
            return NULL;
        }
        buf = nb;
    }
    fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}

/* next_token splits the line at *p into one token, honouring double quotes in
 * the value part of key="a b" and in a bare "a b". */
static char *next_token(char **p)
{
    char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    if (!*s)
        return NULL;
    char *out = s, *w = s;
    int quoted = 0;
    while (*s && (quoted || (*s != ' ' && *s != '\t'))) {
        if (*s == '"') {
            quoted = !quoted;
            s++;
            continue;
        }
        *w++ = *s++;
    }
    if (*s)
        s++;
    *w = 0;
    *p = s;
    return out;
}

static void copy_str(char *dst, const char *src)
{
    snprintf(dst, STR, "%s", src);
}

static int kv(const char *tok, const char *key, const char **val)
{
    size_t n = strlen(key);
    if (strncmp(tok, key, n) == 0 && tok[n] == '=') {
        *val = tok + n + 1;
        return 1;
    }
    return 0;
}

static int entity_group_of(const char *s)
{
    if (strcmp(s, "gpu") == 0)
        return DCGM_FE_GPU;
    if (strcmp(s, "gi") == 0)
        return DCGM_FE_GPU_I;
    if (strcmp(s, "ci") == 0)
        return DCGM_FE_GPU_CI;
    if (strcmp(s, "none") == 0)
        return DCGM_FE_NONE;
    return -1;
}

static int sentinel_index(const char *s)
{
    if (strcmp(s, "blank") == 0)
        return 0;
    if (strcmp(s, "notfound") == 0)
        return 1;
    if (strcmp(s, "notsupported") == 0)
        return 2;
    if (strcmp(s, "notperm") == 0)
        return 3;
    return -1;
}

static int parse_typed(struct value *v, const char *typed)
{
    const char *colon = strchr(typed, ':');
    if (!colon)
        return -1;
    size_t tl = (size_t)(colon - typed);
    const char *val = colon + 1;
    int sidx = sentinel_index(val);
    v->status = DCGM_ST_OK;
    if (tl == 1 && typed[0] == 'i') {
        v->type = DCGM_FT_INT64;
        v->i = sidx >= 0 ? DCGM_INT64_BLANK + sidx : strtoll(val, NULL, 10);
    } else if (tl == 3 && strncmp(typed, "i32", 3) == 0) {
        v->type = DCGM_FT_INT64;
        v->i = sidx >= 0 ? DCGM_INT32_BLANK + sidx : strtoll(val, NULL, 10);
    } else if (tl == 1 && typed[0] == 'd') {
        v->type = DCGM_FT_DOUBLE;
        v->d = sidx >= 0 ? DCGM_FP64_BLANK + sidx : strtod(val, NULL);
    } else if (tl == 1 && typed[0] == 's') {
        static const char *blanks[] = {DCGM_STR_BLANK, DCGM_STR_NOT_FOUND, DCGM_STR_NOT_SUPPORTED,
                                       DCGM_STR_NOT_PERMISSIONED};
        v->type = DCGM_FT_STRING;
        copy_str(v->s, sidx >= 0 ? blanks[sidx] : val);
    } else if (tl == 6 && strncmp(typed, "status", 6) == 0) {
        v->type = DCGM_FT_INT64;
        v->i = DCGM_INT64_BLANK;
        v->status = (int)strtol(val, NULL, 10);
    } else {
        return -1;
    }
    return 0;
}

static void parse_line(struct state *s, char *line)
{
    char *p = line;
    char *cmd = next_token(&p);
    if (!cmd || cmd[0] == '#')
        return;
    char *tok;
    const char *val;
    if (strcmp(cmd, "down") == 0) {
        s->down = 1;
    } else if (strcmp(cmd, "driver") == 0) {
        if ((tok = next_token(&p)))
            copy_str(s->driver, tok);
    } else if (strcmp(cmd, "gpu") == 0 && s->ngpus < MAX_GPUS) {
        struct gpu *g = &s->gpus[s->ngpus];
        memset(g, 0, sizeof(*g));
        if (!(tok = next_token(&p)))
            return;
        g->id = atoi(tok);
        while ((tok = next_token(&p))) {
            if (kv(tok, "uuid", &val))
                copy_str(g->uuid, val);
            else if (kv(tok, "name", &val))
                copy_str(g->name, val);
            else if (kv(tok, "bus", &val))
                copy_str(g->bus, val);
            else if (kv(tok, "minor", &val))
                g->minor = strtoll(val, NULL, 10);
            else if (kv(tok, "fb", &val))
                g->fb = strtoll(val, NULL, 10);
            else if (kv(tok, "status", &val))
                g->status = strcmp(val, "lost") == 0 ? ST_LOST
                            : strcmp(val, "inaccessible") == 0 ? ST_INACCESSIBLE
                                                                : ST_OK;
            else if (kv(tok, "listed", &val))
                g->listed = atoi(val);
            else if (kv(tok, "prof", &val)) {
                g->has_prof = 1;
                char *end;
                while (*val && g->nprof < MAX_PROF) {
                    long f = strtol(val, &end, 10);
                    if (end == val)
                        break;
                    g->prof[g->nprof++] = (int)f;
                    val = *end == ',' ? end + 1 : end;
                }
            }
        }
        s->ngpus++;
    } else if (strcmp(cmd, "gi") == 0 && s->ngis < MAX_GIS) {
        struct gi *g = &s->gis[s->ngis];
        memset(g, 0, sizeof(*g));
        if (!(tok = next_token(&p)))
            return;
        g->id = atoi(tok);
        while ((tok = next_token(&p))) {
            if (kv(tok, "gpu", &val))
                g->gpu = atoi(val);
            else if (kv(tok, "instance", &val))
                g->instance = atoi(val);
            else if (kv(tok, "profile", &val))
                copy_str(g->profile, val);
            else if (kv(tok, "profileid", &val))
                g->profileid = atoi(val);
            else if (kv(tok, "slices", &val))
                g->slices = atoi(val);
            else if (kv(tok, "uuid", &val))
                copy_str(g->uuid, val);
            else if (kv(tok, "fb", &val))
                g->fb = strtoll(val, NULL, 10);
        }
        s->ngis++;
    } else if (strcmp(cmd, "ci") == 0 && s->ncis < MAX_CIS) {
        struct ci *c = &s->cis[s->ncis];
        memset(c, 0, sizeof(*c));
        if (!(tok = next_token(&p)))
            return;
        c->id = atoi(tok);
        while ((tok = next_token(&p))) {
            if (kv(tok, "gi", &val))
                c->gi = atoi(val);
            else if (kv(tok, "instance", &val))
                c->instance = atoi(val);
            else if (kv(tok, "uuid", &val))
                copy_str(c->uuid, val);
        }
        s->ncis++;
    } else if (strcmp(cmd, "value") == 0 && s->nvalues < MAX_VALUES) {
        struct value *v = &s->values[s->nvalues];
        memset(v, 0, sizeof(*v));
        char *g = next_token(&p), *e = next_token(&p), *f = next_token(&p), *t = next_token(&p);
        if (!g || !e || !f || !t || (v->group = entity_group_of(g)) < 0)
            return;
        v->entity = atoi(e);
        v->field = atoi(f);
        if (parse_typed(v, t) == 0)
            s->nvalues++;
    } else if (strcmp(cmd, "xid") == 0 && s->nxids < MAX_XIDS) {
        char *g = next_token(&p), *c = next_token(&p), *ts = next_token(&p);
        if (!g || !c || !ts)
            return;
        s->xids[s->nxids++] = (struct xid){atoi(g), strtoll(c, NULL, 10), strtoll(ts, NULL, 10)};
    } else if (strcmp(cmd, "health") == 0 && s->nhealth < MAX_HEALTH) {
        struct health *h = &s->health[s->nhealth];
        char *g = next_token(&p), *sys = next_token(&p), *res = next_token(&p), *code = next_token(&p);
        if (!g || !sys || !res || !code)
            return;
        h->gpu = atoi(g);
        h->system = (unsigned int)strtoul(sys, NULL, 0);
        h->result = (unsigned int)strtoul(res, NULL, 10);
        h->code = (unsigned int)strtoul(code, NULL, 10);
        while (*p == ' ')
            p++;
        copy_str(h->msg, p);
        s->nhealth++;
    } else if ((strcmp(cmd, "fail") == 0 || strcmp(cmd, "hang") == 0) && s->nfaults < MAX_FAULTS) {
        struct fault *f = &s->faults[s->nfaults];
        memset(f, 0, sizeof(*f));
        char *fn = next_token(&p), *arg = next_token(&p);
        if (!fn || !arg)
            return;
        snprintf(f->fn, sizeof(f->fn), "%s", fn);
        if (cmd[0] == 'f')
            f->code = atoi(arg);
        else
            f->ms = strtoll(arg, NULL, 10);
        while ((tok = next_token(&p)))
            if (kv(tok, "n", &val))
                f->limit = atoi(val);
        s->nfaults++;
    }
}

static void parse_state(struct state *s, char *text)
{
    memset(s, 0, sizeof(*s));
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
        parse_line(s, line);
}

/* reload re-reads the state file; it returns 1 when the content changed. */
static int reload(void)
{
    const char *path = getenv("FAKEDCGM_STATE");
    /* A new state file is a new fake hostengine: its calls file starts
     * from zero (tests in one process each use their own files). */
    static char last_path[4096];
    if (strcmp(path ? path : "", last_path) != 0) {
        snprintf(last_path, sizeof(last_path), "%s", path ? path : "");
        ncounters = 0;
        sessions = 0;
        connect_unix = -1;
        connect_addr[0] = 0;
    }
    size_t len = 0;
    char *text = path ? read_file(path, &len) : NULL;
    if (!text) {
        text = strdup("");
        len = 0;
    }
    if (raw && len == raw_len && memcmp(raw, text, len) == 0) {
        free(text);
        return 0;
    }
    free(raw);
    raw = text;
    raw_len = len;
    char *copy = strdup(text);
    parse_state(&st, copy);
    free(copy);
    return 1;
}

static int state_changed_since(const char *snapshot, size_t len)
{
    const char *path = getenv("FAKEDCGM_STATE");
    size_t n = 0;
    char *text = path ? read_file(path, &n) : NULL;
    int changed = text ? (n != len || memcmp(text, snapshot, n) != 0) : len != 0;
    free(text);
    return changed;
}

/* ---- bookkeeping ------------------------------------------------------- */

static int count_active(void)
{
    int n = 0;
    for (int i = 0; i < MAX_WATCHES; i++)
        n += watches[i].used;
    return n;
}

static void write_calls(void)
{
    char path[4096];
    const char *calls = getenv("FAKEDCGM_CALLS");
    const char *state = getenv("FAKEDCGM_STATE");
    if (calls)
        snprintf(path, sizeof(path), "%s", calls);
    else if (state)
        snprintf(path, sizeof(path), "%s.calls", state);
    else
        return;
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    for (int i = 0; i < ncounters; i++)
        fprintf(f, "%s %lld\n", counters[i].fn, counters[i].n);
    int ngroups = 0, nfg = 0;
    for (int i = 0; i < MAX_GROUPS; i++)
        ngroups += groups[i].used;
    for (int i = 0; i < MAX_FIELD_GROUPS; i++)
        nfg += field_groups[i].used;
    fprintf(f, "sessions %lld\n", sessions);
    fprintf(f, "active_groups %d\n", ngroups);
    fprintf(f, "active_field_groups %d\n", nfg);
    fprintf(f, "active_watches %d\n", count_active());
    fprintf(f, "in_flight %d\n", in_flight);
    if (connect_unix >= 0)
        fprintf(f, "connect %s %d\n", connect_addr, connect_unix);
    for (int i = 0; i < MAX_WATCHES; i++) {
        struct watch *w = &watches[i];
        if (!w->used)
            continue;
        struct group *g = &groups[w->group];
        struct field_group *fg = &field_groups[w->field_group];
        fprintf(f, "watch freq_us=%lld keep_age_s=%g keep_samples=%d entities=", w->freq, w->keep_age,
                w->keep_samples);
        for (int e = 0; e < g->nentities; e++)
            fprintf(f, "%s%u:%u", e ? "," : "", (unsigned)g->entities[e].entityGroupId, g->entities[e].entityId);
        fprintf(f, " fields=");
        for (int k = 0; k < fg->nfields; k++)
            fprintf(f, "%s%u", k ? "," : "", fg->fields[k]);
        fprintf(f, "\n");
    }
    fclose(f);
    rename(tmp, path);
}

static void count_call(const char *fn)
{
    for (int i = 0; i < ncounters; i++) {
        if (strcmp(counters[i].fn, fn) == 0) {
            counters[i].n++;
            return;
        }
    }
    if (ncounters < MAX_COUNTERS)
        counters[ncounters++] = (struct counter){fn, 1};
}

static void sleep_ms(long long ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

/* injected_error returns the error a "fail" directive injects into fn, or
 * DCGM_ST_OK; wildcard says whether "fail *" applies. */
static dcgmReturn_t injected_error(const char *fn, int wildcard)
{
    for (int i = 0; i < st.nfaults; i++) {
        struct fault *f = &st.faults[i];
        if (f->code == 0)
            continue;
        if (strcmp(f->fn, fn) != 0 && !(wildcard && strcmp(f->fn, "*") == 0))
            continue;
        if (f->limit > 0 && f->used >= f->limit)
            continue;
        f->used++;
        return (dcgmReturn_t)f->code;
    }
    return DCGM_ST_OK;
}

/* enter is called with mu held at the start of every entry point: it reloads
 * the state, counts the call, applies an injected hang (releasing mu while it
 * waits) and returns an injected error code, or DCGM_ST_OK. */
static dcgmReturn_t enter(const char *fn)
{
    if (reload())
        for (int i = 0; i < st.nfaults; i++)
            st.faults[i].used = 0;
    count_call(fn);
    for (int i = 0; i < st.nfaults; i++) {
        struct fault *f = &st.faults[i];
        if (f->code != 0 || f->ms <= 0)
            continue;
        if (strcmp(f->fn, fn) != 0 && strcmp(f->fn, "*") != 0)
            continue;
        if (f->limit > 0 && f->used >= f->limit)
            continue;
        f->used++;
        long long ms = f->ms;
        size_t len = raw_len;
        char *snapshot = malloc(len + 1);
        if (snapshot)
            memcpy(snapshot, raw, len + 1);
        in_flight++;
        write_calls();
        pthread_mutex_unlock(&mu);
        for (long long waited = 0; waited < ms; waited += 5) {
            sleep_ms(ms - waited < 5 ? ms - waited : 5);
            if (snapshot && state_changed_since(snapshot, len))
                break;
        }
        free(snapshot);
        pthread_mutex_lock(&mu);
        in_flight--;
        break;
    }
    if (reload())
        for (int i = 0; i < st.nfaults; i++)
            st.faults[i].used = 0;
    dcgmReturn_t rc = injected_error(fn, 1);
    write_calls();
    return rc;
}

#define ENTER(fn)                                                                                                    \
    pthread_mutex_lock(&mu);                                                                                         \
    do {                                                                                                             \
        dcgmReturn_t injected_ = enter(fn);                                                                          \
        if (injected_ != DCGM_ST_OK) {                                                                               \
            pthread_mutex_unlock(&mu);                                                                               \
            return injected_;                                                                                        \
        }                                                                                                            \
    } while (0)

#define RETURN(rc)                                                                                                   \
    do {                                                                                                             \
        dcgmReturn_t rc_ = (rc);                                                                                     \
        write_calls();                                                                                               \
        pthread_mutex_unlock(&mu);                                                                                   \
        return rc_;                                                                                                  \
    } while (0)

/* check_handle validates a connection handle: the hostengine going down
 * invalidates the connection for good. */
static dcgmReturn_t check_handle(dcgmHandle_t h)
{
    if (!initialized)
        return DCGM_ST_UNINITIALIZED;
    if (st.down)
        session_valid = 0;
    if (h == 0 || h != session || !session_valid)
        return DCGM_ST_CONNECTION_NOT_VALID;
    return DCGM_ST_OK;
}

#define HANDLE(h)                                                                                                    \
    do {                                                                                                             \
        dcgmReturn_t hrc_ = check_handle(h);                                                                         \
        if (hrc_ != DCGM_ST_OK)                                                                                      \
            RETURN(hrc_);                                                                                            \
    } while (0)

static void drop_session(void)
{
    memset(groups, 0, sizeof(groups));
    memset(field_groups, 0, sizeof(field_groups));
    memset(watches, 0, sizeof(watches));
    session = 0;
    session_valid = 0;
}

static dcgmReturn_t open_session(dcgmHandle_t *out)
{
    if (!initialized)
        return DCGM_ST_UNINITIALIZED;
    if (!out)
        return DCGM_ST_BADPARAM;
    if (st.down)
        return DCGM_ST_CONNECTION_NOT_VALID;
    drop_session();
    sessions++;
    session = (uintptr_t)(0x1000 + sessions);
    session_valid = 1;
    *out = session;
    return DCGM_ST_OK;
}

/* ---- entities ------------------------------------------------------------ */

static struct gpu *find_gpu(int id)
{
    for (int i = 0; i < st.ngpus; i++)
        if (st.gpus[i].id == id)
            return &st.gpus[i];
    return NULL;
}

static struct gi *find_gi(int id)
{
    for (int i = 0; i < st.ngis; i++)
        if (st.gis[i].id == id)
            return &st.gis[i];
    return NULL;
}

static struct ci *find_ci(int id)
{
    for (int i = 0; i < st.ncis; i++)
        if (st.cis[i].id == id)
            return &st.cis[i];
    return NULL;
}

/* gpu_of returns the physical GPU an entity lives on, or NULL. */
static struct gpu *gpu_of(int group, int id)
{
    switch (group) {
    case DCGM_FE_GPU:
        return find_gpu(id);
    case DCGM_FE_GPU_I: {
        struct gi *g = find_gi(id);
        return g ? find_gpu(g->gpu) : NULL;
    }
    case DCGM_FE_GPU_CI: {
        struct ci *c = find_ci(id);
        struct gi *g = c ? find_gi(c->gi) : NULL;
        return g ? find_gpu(g->gpu) : NULL;
    }
    default:
        return NULL;
    }
}

static int gpu_supports(const struct gpu *g, int field)
{
    for (int i = 0; i < g->nprof; i++)
        if (g->prof[i] == field)
            return 1;
    return 0;
}

static int group_has(const struct group *g, int eg, int id)
{
    for (int i = 0; i < g->nentities; i++)
        if ((int)g->entities[i].entityGroupId == eg && (int)g->entities[i].entityId == id)
            return 1;
    return 0;
}

static int field_group_has(const struct field_group *fg, int field)
{
    for (int i = 0; i < fg->nfields; i++)
        if (fg->fields[i] == field)
            return 1;
    return 0;
}

static int watched(int eg, int id, int field)
{
    for (int i = 0; i < MAX_WATCHES; i++) {
        struct watch *w = &watches[i];
        if (w->used && group_has(&groups[w->group], eg, id) && field_group_has(&field_groups[w->field_group], field))
            return 1;
    }
    return 0;
}

static long long now_usec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* lookup computes the current value of one field of one entity. */
static void lookup(int eg, int id, int field, int live, struct value *out)
{
    memset(out, 0, sizeof(*out));
    out->group = eg;
    out->entity = id;
    out->field = field;
    out->type = DCGM_FT_INT64;
    out->i = DCGM_INT64_BLANK;

    struct gpu *g = gpu_of(eg, id);
    if (!g) {
        out->status = DCGM_ST_BADPARAM;
        return;
    }
    if (g->status != ST_OK) {
        out->status = DCGM_ST_GPU_IS_LOST;
        return;
    }
    if (!live && !watched(eg, id, field)) {
        out->status = DCGM_ST_NOT_WATCHED;
        return;
    }
    for (int i = st.nvalues - 1; i >= 0; i--) {
        struct value *v = &st.values[i];
        if (v->group == eg && v->entity == id && v->field == field) {
            *out = *v;
            return;
        }
    }
    struct gi *gi = eg == DCGM_FE_GPU_I ? find_gi(id) : NULL;
    struct ci *ci = eg == DCGM_FE_GPU_CI ? find_ci(id) : NULL;
    out->status = DCGM_ST_OK;
    switch (field) {
    case DCGM_FI_DRIVER_VERSION:
        out->type = DCGM_FT_STRING;
        copy_str(out->s, st.driver);
        return;
    case DCGM_FI_DEV_NAME:
        out->type = DCGM_FT_STRING;
        copy_str(out->s, gi ? gi->profile : ci ? DCGM_STR_NOT_SUPPORTED : g->name);
        return;
    case DCGM_FI_DEV_UUID:
        out->type = DCGM_FT_STRING;
        copy_str(out->s, gi ? gi->uuid : ci ? ci->uuid : g->uuid);
        return;
    case DCGM_FI_DEV_PCI_BUSID:
        out->type = DCGM_FT_STRING;
        copy_str(out->s, g->bus);
        return;
    case DCGM_FI_DEV_MINOR_NUMBER:
        out->i = g->minor;
        return;
    case DCGM_FI_DEV_FB_TOTAL:
        out->i = gi ? gi->fb : g->fb;
        return;
    case FIELD_XID: {
        long long best = -1;
        for (int i = 0; i < st.nxids; i++)
            if (st.xids[i].gpu == g->id && eg == DCGM_FE_GPU && (best < 0 || st.xids[i].ts >= st.xids[best].ts))
                best = i;
        if (best >= 0) {
            out->i = st.xids[best].code;
            out->ts = st.xids[best].ts;
            return;
        }
        break;
    }
    }
    out->status = DCGM_ST_NO_DATA;
    out->i = DCGM_INT64_BLANK;
}

static void fill_value(const struct value *v, unsigned short *fieldType, int *status, int64_t *ts, void *payload,
                       size_t size)
{
    *fieldType = (unsigned short)v->type;
    *status = v->status;
    *ts = v->ts ? v->ts : now_usec();
    memset(payload, 0, size);
    switch (v->type) {
    case DCGM_FT_DOUBLE:
        memcpy(payload, &v->d, sizeof(v->d));
        break;
    case DCGM_FT_STRING:
        snprintf(payload, DCGM_MAX_STR_LENGTH, "%s", v->s);
        break;
    default: {
        int64_t i = v->i;
        memcpy(payload, &i, sizeof(i));
    }
    }
}

static void fill_v1(dcgmFieldValue_v1 *out, const struct value *v)
{
    out->version = dcgmFieldValue_version1;
    out->fieldId = (unsigned short)v->field;
    fill_value(v, &out->fieldType, &out->status, &out->ts, &out->value, sizeof(out->value));
}

static void fill_v2(dcgmFieldValue_v2 *out, const struct value *v)
{
    out->version = dcgmFieldValue_version2;
    out->entityGroupId = (dcgm_field_entity_group_t)v->group;
    out->entityId = (dcgm_field_eid_t)v->entity;
    out->fieldId = (unsigned short)v->field;
    out->unused = 0;
    fill_value(v, &out->fieldType, &out->status, &out->ts, &out->value, sizeof(out->value));
}

/* ---- error strings --------------------------------------------------------- */

API const char *errorString(dcgmReturn_t result)
{
    switch (result) {
    case DCGM_ST_OK:
        return "Success";
    case DCGM_ST_BADPARAM:
        return "Bad parameter passed to function";
    case DCGM_ST_GENERIC_ERROR:
        return "Generic unspecified error";
    case DCGM_ST_NOT_SUPPORTED:
        return "Not supported";
    case DCGM_ST_UNINITIALIZED:
        return "Not initialized";
    case DCGM_ST_TIMEOUT:
        return "Timeout";
    case DCGM_ST_VER_MISMATCH:
        return "API version mismatch";
    case DCGM_ST_NO_DATA:
        return "No data";
    case DCGM_ST_NOT_WATCHED:
        return "Field not watched";
    case DCGM_ST_NO_PERMISSION:
        return "No permission";
    case DCGM_ST_GPU_IS_LOST:
        return "GPU is lost";
    case DCGM_ST_CONNECTION_NOT_VALID:
        return "Host engine connection invalid or closed";
    case DCGM_ST_PROFILING_NOT_SUPPORTED:
        return "Profiling not supported";
    case DCGM_ST_PROFILING_MULTI_PASS:
        return "Profiling metrics need more than one pass";
    case DCGM_ST_MAX_LIMIT:
        return "Max limit reached";
    default:
        return "Unknown error (fakedcgm)";
    }
}

/* ---- administration ------------------------------------------------------- */

API dcgmReturn_t dcgmInit(void)
{
    ENTER("dcgmInit");
    initialized = 1;
    RETURN(DCGM_ST_OK);
}

API dcgmReturn_t dcgmShutdown(void)
{
    ENTER("dcgmShutdown");
    drop_session();
    initialized = 0;
    RETURN(DCGM_ST_OK);
}

API dcgmReturn_t dcgmStartEmbedded(dcgmOperationMode_t opMode, dcgmHandle_t *pDcgmHandle)
{
    ENTER("dcgmStartEmbedded");
    if (opMode != DCGM_OPERATION_MODE_AUTO && opMode != DCGM_OPERATION_MODE_MANUAL)
        RETURN(DCGM_ST_BADPARAM);
    RETURN(open_session(pDcgmHandle));
}

API dcgmReturn_t dcgmStopEmbedded(dcgmHandle_t pDcgmHandle)
{
    ENTER("dcgmStopEmbedded");
    if (pDcgmHandle != session)
        RETURN(DCGM_ST_BADPARAM);
    drop_session();
    RETURN(DCGM_ST_OK);
}

API dcgmReturn_t dcgmConnect_v2(const char *ipAddress, dcgmConnectV2Params_t *connectParams,
                                dcgmHandle_t *pDcgmHandle)
{
    ENTER("dcgmConnect_v2");
    if (!ipAddress || !connectParams)
        RETURN(DCGM_ST_BADPARAM);
    if (connectParams->version != dcgmConnectV2Params_version2)
        RETURN(DCGM_ST_VER_MISMATCH);
    copy_str(connect_addr, ipAddress);
    connect_unix = connectParams->addressIsUnixSocket ? 1 : 0;
    RETURN(open_session(pDcgmHandle));
}

API dcgmReturn_t dcgmDisconnect(dcgmHandle_t pDcgmHandle)
{
    ENTER("dcgmDisconnect");
    if (pDcgmHandle == session)
        drop_session();
    RETURN(DCGM_ST_OK);
}

/* ---- devices ----------------------------------------------------------- */

static dcgmReturn_t list_gpus(dcgmHandle_t h, unsigned int ids[DCGM_MAX_NUM_DEVICES], int *count, int only_ok)
{
    dcgmReturn_t rc = check_handle(h);
    if (rc != DCGM_ST_OK)
        return rc;
    if (!ids || !count)
        return DCGM_ST_BADPARAM;
    int n = 0;
    for (int i = 0; i < st.ngpus && n < DCGM_MAX_NUM_DEVICES; i++)
        if (!only_ok || st.gpus[i].status == ST_OK || st.gpus[i].listed)
            ids[n++] = (unsigned int)st.gpus[i].id;
    *count = n;
    return DCGM_ST_OK;
}

API dcgmReturn_t dcgmGetAllDevices(dcgmHandle_t pDcgmHandle, unsigned int gpuIdList[DCGM_MAX_NUM_DEVICES],
                                   int *count)
{
    ENTER("dcgmGetAllDevices");
    RETURN(list_gpus(pDcgmHandle, gpuIdList, count, 0));
}

API dcgmReturn_t dcgmGetAllSupportedDevices(dcgmHandle_t pDcgmHandle,
                                            unsigned int gpuIdList[DCGM_MAX_NUM_DEVICES], int *count)
{
    ENTER("dcgmGetAllSupportedDevices");
    RETURN(list_gpus(pDcgmHandle, gpuIdList, count, 1));
}

API dcgmReturn_t dcgmGetGpuStatus(dcgmHandle_t pDcgmHandle, unsigned int gpuId, DcgmEntityStatus_t *status)
{
    ENTER("dcgmGetGpuStatus");
    HANDLE(pDcgmHandle);
    if (!status)
        RETURN(DCGM_ST_BADPARAM);
    struct gpu *g = find_gpu((int)gpuId);
    if (!g)
        *status = DcgmEntityStatusUnknown;
    else if (g->status == ST_LOST)
        *status = DcgmEntityStatusLost;
    else if (g->status == ST_INACCESSIBLE)
        *status = DcgmEntityStatusInaccessible;
    else
        *status = DcgmEntityStatusOk;
    RETURN(DCGM_ST_OK);
}

API dcgmReturn_t dcgmGetGpuInstanceHierarchy(dcgmHandle_t dcgmHandle, dcgmMigHierarchy_v2 *hierarchy)
{
    ENTER("dcgmGetGpuInstanceHierarchy");
    HANDLE(dcgmHandle);
    if (!hierarchy)
        RETURN(DCGM_ST_BADPARAM);
    if (hierarchy->version != dcgmMigHierarchy_version2)
        RETURN(DCGM_ST_VER_MISMATCH);
    unsigned int n = 0;
    for (int i = 0; i < st.ngis && n < DCGM_MAX_HIERARCHY_INFO; i++) {
        struct gi *gi = &st.gis[i];
        struct gpu *g = find_gpu(gi->gpu);
        if (!g || (g->status != ST_OK && !g->listed))
            continue;
        dcgmMigHierarchyInfo_v2 *e = &hierarchy->entityList[n++];
        memset(e, 0, sizeof(*e));
        e->entity.entityGroupId = DCGM_FE_GPU_I;
        e->entity.entityId = (dcgm_field_eid_t)gi->id;
        e->parent.entityGroupId = DCGM_FE_GPU;
        e->parent.entityId = (dcgm_field_eid_t)gi->gpu;
        snprintf(e->info.gpuUuid, sizeof(e->info.gpuUuid), "%.127s", g->uuid);
        e->info.nvmlGpuIndex = (unsigned int)gi->gpu;
        e->info.nvmlInstanceId = (unsigned int)gi->instance;
        e->info.nvmlComputeInstanceId = UINT_MAX;
        e->info.nvmlMigProfileId = (unsigned int)gi->profileid;
        e->info.nvmlProfileSlices = (unsigned int)gi->slices;
        for (int j = 0; j < st.ncis && n < DCGM_MAX_HIERARCHY_INFO; j++) {
            struct ci *ci = &st.cis[j];
            if (ci->gi != gi->id)
                continue;
            dcgmMigHierarchyInfo_v2 *c = &hierarchy->entityList[n++];
            memset(c, 0, sizeof(*c));
            c->entity.entityGroupId = DCGM_FE_GPU_CI;
            c->entity.entityId = (dcgm_field_eid_t)ci->id;
            c->parent.entityGroupId = DCGM_FE_GPU_I;
            c->parent.entityId = (dcgm_field_eid_t)gi->id;
            snprintf(c->info.gpuUuid, sizeof(c->info.gpuUuid), "%.127s", g->uuid);
            c->info.nvmlGpuIndex = (unsigned int)gi->gpu;
            c->info.nvmlInstanceId = (unsigned int)gi->instance;
            c->info.nvmlComputeInstanceId = (unsigned int)ci->instance;
            c->info.nvmlMigProfileId = (unsigned int)gi->profileid;
            c->info.nvmlProfileSlices = (unsigned int)gi->slices;
        }
    }
    hierarchy->count = n;
    RETURN(DCGM_ST_OK);
}

/* ---- groups ---------------------------------------------------------------- */

static int entity_exists(int eg, int id)
{
    switch (eg) {
    case DCGM_FE_GPU:
        return find_gpu(id) != NULL;
    case DCGM_FE_GPU_I:
        return find_gi(id) != NULL;
    case DCGM_FE_GPU_CI:
        return find_ci(id) != NULL;
    default:
        return 0;
    }
}

static struct group *get_group(dcgmGpuGrp_t id)
{
    if (id == 0 || id >= MAX_GROUPS || !groups[id].used)
        return NULL;
    return &groups[id];
}

static struct field_group *get_field_group(dcgmFieldGrp_t id)
{
    if (id == 0 || id >= MAX_FIELD_GROUPS || !field_groups[id].used)
        return NULL;
    return &field_groups[id];
}

API dcgmReturn_t dcgmGroupCreate(dcgmHandle_t pDcgmHandle, dcgmGroupType_t type, const char *groupName,
                                 dcgmGpuGrp_t *pDcgmGrpId)
{
    ENTER("dcgmGroupCreate");
    HANDLE(pDcgmHandle);
    if (!groupName || !pDcgmGrpId)
        RETURN(DCGM_ST_BADPARAM);
    for (uintptr_t i = 1; i < MAX_GROUPS; i++) {
        if (groups[i].used)
            continue;
        memset(&groups[i], 0, sizeof(groups[i]));
        groups[i].used = 1;
        if (type == DCGM_GROUP_DEFAULT) {
            for (int g = 0; g < st.ngpus; g++) {
                if (st.gpus[g].status != ST_OK)
                    continue;
                dcgmGroupEntityPair_t *e = &groups[i].entities[groups[i].nentities++];
                e->entityGroupId = DCGM_FE_GPU;
                e->entityId = (dcgm_field_eid_t)st.gpus[g].id;
            }
        }
        *pDcgmGrpId = i;
        RETURN(DCGM_ST_OK);
    }
    RETURN(DCGM_ST_MAX_LIMIT);
}

static dcgmReturn_t add_entity(dcgmGpuGrp_t groupId, int eg, int id)
{
    struct group *g = get_group(groupId);
    if (!g || !entity_exists(eg, id))
        return DCGM_ST_BADPARAM;
    if (group_has(g, eg, id))
        return DCGM_ST_OK;
    if (g->nentities >= MAX_GROUP_ENTITIES)
        return DCGM_ST_MAX_LIMIT;
    g->entities[g->nentities].entityGroupId = (dcgm_field_entity_group_t)eg;
    g->entities[g->nentities].entityId = (dcgm_field_eid_t)id;
    g->nentities++;
    return DCGM_ST_OK;
}

API dcgmReturn_t dcgmGroupAddDevice(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, unsigned int gpuId)
{
    ENTER("dcgmGroupAddDevice");
    HANDLE(pDcgmHandle);
    RETURN(add_entity(groupId, DCGM_FE_GPU, (int)gpuId));
}

API dcgmReturn_t dcgmGroupAddEntity(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                    dcgm_field_entity_group_t entityGroupId, dcgm_field_eid_t entityId)
{
    ENTER("dcgmGroupAddEntity");
    HANDLE(pDcgmHandle);
    RETURN(add_entity(groupId, (int)entityGroupId, (int)entityId));
}

API dcgmReturn_t dcgmGroupDestroy(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId)
{
    ENTER("dcgmGroupDestroy");
    HANDLE(pDcgmHandle);
    if (!get_group(groupId))
        RETURN(DCGM_ST_BADPARAM);
    groups[groupId].used = 0;
    for (int i = 0; i < MAX_WATCHES; i++)
        if (watches[i].used && watches[i].group == groupId)
            watches[i].used = 0;
    RETURN(DCGM_ST_OK);
}

API dcgmReturn_t dcgmFieldGroupCreate(dcgmHandle_t dcgmHandle, int numFieldIds, const unsigned short *fieldIds,
                                      const char *fieldGroupName, dcgmFieldGrp_t *dcgmFieldGroupId)
{
    ENTER("dcgmFieldGroupCreate");
    HANDLE(dcgmHandle);
    if (numFieldIds <= 0 || numFieldIds > DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP || !fieldIds || !fieldGroupName ||
        !dcgmFieldGroupId)
        RETURN(DCGM_ST_BADPARAM);
    for (uintptr_t i = 1; i < MAX_FIELD_GROUPS; i++) {
        if (field_groups[i].used)
            continue;
        field_groups[i].used = 1;
        field_groups[i].nfields = numFieldIds;
        memcpy(field_groups[i].fields, fieldIds, sizeof(unsigned short) * (size_t)numFieldIds);
        *dcgmFieldGroupId = i;
        RETURN(DCGM_ST_OK);
    }
    RETURN(DCGM_ST_MAX_LIMIT);
}

API dcgmReturn_t dcgmFieldGroupDestroy(dcgmHandle_t dcgmHandle, dcgmFieldGrp_t dcgmFieldGroupId)
{
    ENTER("dcgmFieldGroupDestroy");
    HANDLE(dcgmHandle);
    if (!get_field_group(dcgmFieldGroupId))
        RETURN(DCGM_ST_BADPARAM);
    field_groups[dcgmFieldGroupId].used = 0;
    for (int i = 0; i < MAX_WATCHES; i++)
        if (watches[i].used && watches[i].field_group == dcgmFieldGroupId)
            watches[i].used = 0;
    RETURN(DCGM_ST_OK);
}

/* ---- watches and values ------------------------------------------------- */

API dcgmReturn_t dcgmWatchFields(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmFieldGrp_t fieldGroupId,
                                 long long updateFreq, double maxKeepAge, int maxKeepSamples)
{
    ENTER("dcgmWatchFields");
    HANDLE(pDcgmHandle);
    struct group *g = get_group(groupId);
    struct field_group *fg = get_field_group(fieldGroupId);
    if (!g || !fg || updateFreq <= 0)
        RETURN(DCGM_ST_BADPARAM);
    /* Profiling fields need every GPU of the group to support them. */
    int profiling = 0;
    for (int k = 0; k < fg->nfields; k++) {
        int f = fg->fields[k];
        if (f < PROF_FIRST || f > PROF_LAST)
            continue;
        profiling = 1;
        for (int e = 0; e < g->nentities; e++) {
            struct gpu *gpu = gpu_of((int)g->entities[e].entityGroupId, (int)g->entities[e].entityId);
            if (!gpu || !gpu_supports(gpu, f))
                RETURN(DCGM_ST_PROFILING_NOT_SUPPORTED);
        }
    }
    if (profiling) {
        dcgmReturn_t rc = injected_error("dcgmWatchFields.profiling", 0);
        if (rc != DCGM_ST_OK)
            RETURN(rc);
    }
    for (int i = 0; i < MAX_WATCHES; i++) {
        struct watch *w = &watches[i];
        if (w->used && w->group == groupId && w->field_group == fieldGroupId) {
            w->freq = updateFreq;
            w->keep_age = maxKeepAge;
            w->keep_samples = maxKeepSamples;
            RETURN(DCGM_ST_OK);
        }
    }
    for (int i = 0; i < MAX_WATCHES; i++) {
        if (!watches[i].used) {
            watches[i] = (struct watch){1, groupId, fieldGroupId, updateFreq, maxKeepAge, maxKeepSamples};
            RETURN(DCGM_ST_OK);
        }
    }
    RETURN(DCGM_ST_MAX_LIMIT);
}

API dcgmReturn_t dcgmUnwatchFields(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmFieldGrp_t fieldGroupId)
{
    ENTER("dcgmUnwatchFields");
    HANDLE(pDcgmHandle);
    if (!get_group(groupId) || !get_field_group(fieldGroupId))
        RETURN(DCGM_ST_BADPARAM);
    for (int i = 0; i < MAX_WATCHES; i++)
        if (watches[i].used && watches[i].group == groupId && watches[i].field_group == fieldGroupId)
            watches[i].used = 0;
    RETURN(DCGM_ST_OK);
}

API dcgmReturn_t dcgmUpdateAllFields(dcgmHandle_t pDcgmHandle, int waitForUpdate)
{
    (void)waitForUpdate;
    ENTER("dcgmUpdateAllFields");
    HANDLE(pDcgmHandle);
    RETURN(DCGM_ST_OK);
}

API dcgmReturn_t dcgmEntitiesGetLatestValues(dcgmHandle_t pDcgmHandle, dcgmGroupEntityPair_t entities[],
                                             unsigned int entityCount, unsigned short fields[],
                                             unsigned int fieldCount, unsigned int flags,
                                             dcgmFieldValue_v2 values[])
{
    ENTER("dcgmEntitiesGetLatestValues");
    HANDLE(pDcgmHandle);
    if (!entities || !fields || !values || entityCount == 0 || fieldCount == 0)
        RETURN(DCGM_ST_BADPARAM);
    struct value v;
    for (unsigned int e = 0; e < entityCount; e++) {
        for (unsigned int f = 0; f < fieldCount; f++) {
            lookup((int)entities[e].entityGroupId, (int)entities[e].entityId, fields[f],
                   (flags & DCGM_FV_FLAG_LIVE_DATA) != 0, &v);
            fill_v2(&values[e * fieldCount + f], &v);
        }
    }
    RETURN(DCGM_ST_OK);
}

API dcgmReturn_t dcgmEntityGetLatestValues(dcgmHandle_t pDcgmHandle, dcgm_field_entity_group_t entityGroup,
                                           int entityId, unsigned short fields[], unsigned int count,
                                           dcgmFieldValue_v1 values[])
{
    ENTER("dcgmEntityGetLatestValues");
    HANDLE(pDcgmHandle);
    if (!fields || !values || count == 0)
        RETURN(DCGM_ST_BADPARAM);
    if (!entity_exists((int)entityGroup, entityId))
        RETURN(DCGM_ST_BADPARAM);
    struct value v;
    for (unsigned int f = 0; f < count; f++) {
        lookup((int)entityGroup, entityId, fields[f], 0, &v);
        fill_v1(&values[f], &v);
    }
    RETURN(DCGM_ST_OK);
}

API dcgmReturn_t dcgmGetLatestValuesForFields(dcgmHandle_t pDcgmHandle, int gpuId, unsigned short fields[],
                                              unsigned int count, dcgmFieldValue_v1 values[])
{
    ENTER("dcgmGetLatestValuesForFields");
    HANDLE(pDcgmHandle);
    if (!fields || !values || count == 0 || !find_gpu(gpuId))
        RETURN(DCGM_ST_BADPARAM);
    struct value v;
    for (unsigned int f = 0; f < count; f++) {
        lookup(DCGM_FE_GPU, gpuId, fields[f], 0, &v);
        fill_v1(&values[f], &v);
    }
    RETURN(DCGM_ST_OK);
}

static int cmp_ts(const void *a, const void *b)
{
    long long x = ((const dcgmFieldValue_v1 *)a)->ts, y = ((const dcgmFieldValue_v1 *)b)->ts;
    return (x > y) - (x < y);
}

API dcgmReturn_t dcgmGetValuesSince_v2(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId,
                                       dcgmFieldGrp_t fieldGroupId, long long sinceTimestamp,
                                       long long *nextSinceTimestamp, dcgmFieldValueEntityEnumeration_f enumCB,
                                       void *userData)
{
    ENTER("dcgmGetValuesSince_v2");
    HANDLE(pDcgmHandle);
    struct group *g = get_group(groupId);
    struct field_group *fg = get_field_group(fieldGroupId);
    if (!g || !fg || !nextSinceTimestamp || !enumCB)
        RETURN(DCGM_ST_BADPARAM);
    long long next = sinceTimestamp;
    long long now = now_usec();
    static dcgmFieldValue_v1 buf[MAX_XIDS + DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP];
    for (int e = 0; e < g->nentities; e++) {
        int eg = (int)g->entities[e].entityGroupId, id = (int)g->entities[e].entityId;
        struct gpu *gpu = gpu_of(eg, id);
        if (!gpu || gpu->status != ST_OK)
            continue;
        int n = 0;
        for (int k = 0; k < fg->nfields; k++) {
            int f = fg->fields[k];
            if (!watched(eg, id, f))
                continue;
            if (f == FIELD_XID && eg == DCGM_FE_GPU) {
                for (int x = 0; x < st.nxids; x++) {
                    struct xid *xe = &st.xids[x];
                    if (xe->gpu != id || xe->ts < sinceTimestamp)
                        continue;
                    struct value v = {.group = eg, .entity = id, .field = f, .type = DCGM_FT_INT64,
                                      .status = DCGM_ST_OK, .i = xe->code, .ts = xe->ts};
                    fill_v1(&buf[n++], &v);
                    if (xe->ts + 1 > next)
                        next = xe->ts + 1;
                }
                continue;
            }
            if (now < sinceTimestamp)
                continue;
            struct value v;
            lookup(eg, id, f, 0, &v);
            v.ts = now;
            fill_v1(&buf[n++], &v);
            if (now + 1 > next)
                next = now + 1;
        }
        if (n == 0)
            continue;
        qsort(buf, (size_t)n, sizeof(buf[0]), cmp_ts);
        if (enumCB((dcgm_field_entity_group_t)eg, (dcgm_field_eid_t)id, buf, n, userData) < 0)
            break;
    }
    *nextSinceTimestamp = next;
    RETURN(DCGM_ST_OK);
}

/* ---- profiling --------------------------------------------------------------- */

API dcgmReturn_t dcgmProfGetSupportedMetricGroups(dcgmHandle_t pDcgmHandle, dcgmProfGetMetricGroups_t *metricGroups)
{
    ENTER("dcgmProfGetSupportedMetricGroups");
    HANDLE(pDcgmHandle);
    if (!metricGroups)
        RETURN(DCGM_ST_BADPARAM);
    if (metricGroups->version != dcgmProfGetMetricGroups_version3)
        RETURN(DCGM_ST_VER_MISMATCH);
    struct gpu *g = find_gpu((int)metricGroups->gpuId);
    if (!g)
        RETURN(DCGM_ST_BADPARAM);
    if (!g->has_prof)
        RETURN(DCGM_ST_PROFILING_NOT_SUPPORTED);
    metricGroups->numMetricGroups = 0;
    /* One metric group, so that every supported field can be watched
     * together; real GPUs spread them over several major ids. */
    dcgmProfMetricGroupInfo_v2 *m = &metricGroups->metricGroups[metricGroups->numMetricGroups++];
    memset(m, 0, sizeof(*m));
    for (int i = 0; i < g->nprof && i < DCGM_PROF_MAX_FIELD_IDS_PER_GROUP_V2; i++)
        m->fieldIds[m->numFieldIds++] = (unsigned short)g->prof[i];
    RETURN(DCGM_ST_OK);
}

/* ---- health ------------------------------------------------------------------ */

API dcgmReturn_t dcgmHealthSet(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmHealthSystems_t systems)
{
    ENTER("dcgmHealthSet");
    HANDLE(pDcgmHandle);
    struct group *g = get_group(groupId);
    if (!g)
        RETURN(DCGM_ST_BADPARAM);
    g->health = (unsigned int)systems;
    RETURN(DCGM_ST_OK);
}

API dcgmReturn_t dcgmHealthGet(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmHealthSystems_t *systems)
{
    ENTER("dcgmHealthGet");
    HANDLE(pDcgmHandle);
    struct group *g = get_group(groupId);
    if (!g || !systems)
        RETURN(DCGM_ST_BADPARAM);
    *systems = (dcgmHealthSystems_t)g->health;
    RETURN(DCGM_ST_OK);
}

API dcgmReturn_t dcgmHealthCheck(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmHealthResponse_t *results)
{
    ENTER("dcgmHealthCheck");
    HANDLE(pDcgmHandle);
    struct group *g = get_group(groupId);
    if (!g || !results)
        RETURN(DCGM_ST_BADPARAM);
    if (results->version != dcgmHealthResponse_version5)
        RETURN(DCGM_ST_VER_MISMATCH);
    results->overallHealth = DCGM_HEALTH_RESULT_PASS;
    results->incidentCount = 0;
    for (int i = 0; i < st.nhealth && results->incidentCount < DCGM_HEALTH_WATCH_MAX_INCIDENTS_V2; i++) {
        struct health *h = &st.health[i];
        if (!(h->system & g->health) || !group_has(g, DCGM_FE_GPU, h->gpu))
            continue;
        dcgmIncidentInfo_t *inc = &results->incidents[results->incidentCount++];
        memset(inc, 0, sizeof(*inc));
        inc->system = (dcgmHealthSystems_t)h->system;
        inc->health = (dcgmHealthWatchResults_t)h->result;
        inc->error.code = h->code;
        snprintf(inc->error.msg, sizeof(inc->error.msg), "%s", h->msg);
        inc->entityInfo.entityGroupId = DCGM_FE_GPU;
        inc->entityInfo.entityId = (dcgm_field_eid_t)h->gpu;
        if (h->result > (unsigned int)results->overallHealth)
            results->overallHealth = (dcgmHealthWatchResults_t)h->result;
    }
    RETURN(DCGM_ST_OK);
}

/* ---- field metadata ------------------------------------------------------------ */

API int DcgmFieldsInit(void)
{
    return 0;
}

API int DcgmFieldsTerm(void)
{
    return 0;
}

/* The fake keeps no field metadata: callers get "unknown field". */
API dcgm_field_meta_p DcgmFieldGetById(unsigned short fieldId)
{
    (void)fieldId;
    return NULL;
}
