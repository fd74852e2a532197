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
 *            [prof=<fieldId>,<fieldId>...] [links=<n>] [numa=<n>]
 *                                 a GPU; a GPU that is not ok is left out of
 *                                 the supported devices unless listed=1;
 *                                 without prof= profiling is not supported;
 *                                 links= NvLink links are up; numa= is its
 *                                 NUMA node (CPU affinity, PCIe paths)
 *   gi <entityId> gpu=<id> instance=<n> profile=<s> profileid=<n> slices=<n>
 *            uuid=<s> fb=<MiB>    a MIG GPU instance
 *   ci <entityId> gi=<entityId> instance=<n> uuid=<s> [profileid=<n>]
 *            [slices=<n>]         a MIG compute instance: a DCGM_FE_GPU_CI
 *                                 entity whose parent is the DCGM_FE_GPU_I
 *                                 <gi>; profileid is its NVML compute
 *                                 instance profile id and slices its own
 *                                 slice count (default: those of its GPU
 *                                 instance, a compute instance spanning it)
 *   switch <id> bus=<s> links=<n>
 *                                 an NVSwitch with <n> ports, all up
 *   linkstate <gpu|switch> <id> <index> <up|down|disabled|notsupported>
 *                                 the state of one link of a GPU or switch
 *   value <gpu|gi|ci|switch|link> <entityId> <fieldId> <typed>
 *                                 (a link's entity id is a dcgm_link_t)
 *                                 typed: i:<int> d:<float> s:<string>
 *                                 i:blank|notfound|notsupported|notperm (int64
 *                                 sentinels), i32:<same> (int32 sentinels in an
 *                                 int64 field), d:<same>, s:<same>,
 *                                 status:<dcgm code> (per-value error)
 *   xid <gpuId> <code> <timestamp usec>
 *                                 an XID event; the latest one is also the
 *                                 value of field 230
 *   health <gpuId> <system mask> <result 0|10|20> <code> <message>
 *   p2p <gpuId> <peerGpuId> <status>
 *                                 the NvLink P2P status (dcgmNvLinkGpuP2PStatus_t,
 *                                 0..6) from one GPU to another; without one, two
 *                                 GPUs that both have NvLinks up are OK (0) and
 *                                 any other pair NotSupported (5)
 *   cpu <id> cores=<first>-<last> [serial=<s>]
 *                                 an NVIDIA CPU of dcgmGetCpuHierarchy; without
 *                                 any, DCGM's sysmon module is not loaded
 *   fail <function|*> <dcgm code> [n=<count>]
 *                                 make a function return an error (the first
 *                                 <count> calls after the file changed, or all);
 *                                 the function "dcgmWatchFields.profiling"
 *                                 fails only watches of profiling fields
 *   unknown <fieldId>[,<fieldId>...]
 *                                 field ids this hostengine does not know (an
 *                                 older DCGM than the client library):
 *                                 dcgmFieldGroupCreate refuses a group that
 *                                 holds one with DCGM_ST_BADPARAM
 *   hang <function|*> <ms> [n=<count>]
 *                                 make a function block for <ms> before doing
 *                                 its work; the block ends early when the
 *                                 state file changes
 *
 * Fields are only returned for (entity, field) pairs some watch covers, unless
 * the caller asks for live data, like the real hostengine; a reconnect drops
 * all groups and watches.
 *
 * Field metadata (DcgmFieldGetById) comes from DCGM's own field table (see
 * facts[] below), and values follow it as DCGM does: a value is returned in
 * its field's type, and a field is read at its entity level, so a GPU-level
 * field read on a GPU instance or compute instance returns the parent GPU's
 * value ("value gi ..." lines for GPU-level fields are never seen, as on a
 * real hostengine). A global-scope field (the driver and NVML versions) has
 * one value, "value none 0 <field> ...", whatever entity it is read on.
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
#include "nvml.h" /* NVML_FI_* ids of the field metadata's nvmlFieldId */

#define API __attribute__((visibility("default")))

#define MAX_GPUS 32
#define MAX_GIS 256
#define MAX_CIS 256
#define MAX_VALUES 4096
#define MAX_XIDS 1024
#define MAX_HEALTH 256
#define MAX_FAULTS 64
#define MAX_P2P 1024
#define MAX_UNKNOWN_FIELDS 64
#define MAX_SWITCHES DCGM_MAX_NUM_SWITCHES
#define MAX_LINKSTATES 1024
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
    int links;  /* NvLink links up */
    int numa;   /* NUMA node: CPU affinity and PCIe path to the other GPUs */
};

struct gi {
    int id, gpu, instance, profileid, slices;
    char profile[STR], uuid[STR];
    long long fb;
};

/* A MIG compute instance. DCGM reports it as an entity of group
 * DCGM_FE_GPU_CI ("Field is associated with a GPU Compute Instance entity",
 * dcgm_fields.h) with its own MIG device UUID; profileid and slices are
 * its own (0: those of its GPU instance). */
struct ci {
    int id, gi, instance, profileid, slices;
    char uuid[STR];
};

/* An NVSwitch: its id, PCI address and number of ports; every port is up
 * unless a linkstate line says otherwise. */
struct nvswitch {
    int id;
    char bus[STR];
    int links;
};

/* linkstate sets the state (dcgmNvLinkLinkState_t) of one link of a GPU or
 * an NVSwitch (type DCGM_FE_GPU or DCGM_FE_SWITCH). */
struct linkstate {
    int type, parent, index, state;
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

/* p2p overrides the NvLink P2P status of one ordered GPU pair. */
struct p2p {
    int gpu, peer, status;
};

/* An NVIDIA CPU (DCGM_FE_CPU) owning cores first..last. */
struct cpu {
    int id, first, last;
    char serial[STR];
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
    int nunknown;
    unsigned short unknown[MAX_UNKNOWN_FIELDS];
    int nswitches, nlinkstates;
    struct nvswitch switches[MAX_SWITCHES];
    struct linkstate linkstates[MAX_LINKSTATES];
    int np2p, ncpus;
    struct p2p p2p[MAX_P2P];
    struct cpu cpus[DCGM_MAX_NUM_CPUS];
};

struct group {
    int used;
    char name[DCGM_MAX_STR_LENGTH];
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
    /* first_sample is when the watch's first sample exists (usec). "The
     * first update of the field will not occur until the next field update
     * cycle. To force a field update cycle, call dcgmUpdateAllFields(1)"
     * (dcgm_agent.h, dcgmWatchFields): one update period after the watch,
     * or at the next dcgmUpdateAllFields. */
    long long first_sample;
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

static const dcgm_field_meta_t *field_meta(int id);
static void build_table(void);
static int fields_initialized;
static void lookup_at(int eg, int id, int field, struct value *out);

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
    if (strcmp(s, "switch") == 0)
        return DCGM_FE_SWITCH;
    if (strcmp(s, "link") == 0)
        return DCGM_FE_LINK;
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
            else if (kv(tok, "links", &val))
                g->links = atoi(val);
            else if (kv(tok, "numa", &val))
                g->numa = atoi(val);
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
            else if (kv(tok, "profileid", &val))
                c->profileid = atoi(val);
            else if (kv(tok, "slices", &val))
                c->slices = atoi(val);
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
    } else if (strcmp(cmd, "switch") == 0 && s->nswitches < MAX_SWITCHES) {
        struct nvswitch *w = &s->switches[s->nswitches];
        memset(w, 0, sizeof(*w));
        if (!(tok = next_token(&p)))
            return;
        w->id = atoi(tok);
        while ((tok = next_token(&p))) {
            if (kv(tok, "bus", &val))
                copy_str(w->bus, val);
            else if (kv(tok, "links", &val))
                w->links = atoi(val);
        }
        s->nswitches++;
    } else if (strcmp(cmd, "linkstate") == 0 && s->nlinkstates < MAX_LINKSTATES) {
        char *t = next_token(&p), *parent = next_token(&p), *index = next_token(&p), *state = next_token(&p);
        if (!t || !parent || !index || !state)
            return;
        struct linkstate *l = &s->linkstates[s->nlinkstates];
        l->type = strcmp(t, "switch") == 0 ? DCGM_FE_SWITCH : DCGM_FE_GPU;
        l->parent = atoi(parent);
        l->index = atoi(index);
        l->state = strcmp(state, "up") == 0     ? DcgmNvLinkLinkStateUp
                   : strcmp(state, "down") == 0 ? DcgmNvLinkLinkStateDown
                   : strcmp(state, "disabled") == 0 ? DcgmNvLinkLinkStateDisabled
                                                    : DcgmNvLinkLinkStateNotSupported;
        s->nlinkstates++;
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
    } else if (strcmp(cmd, "p2p") == 0 && s->np2p < MAX_P2P) {
        char *g = next_token(&p), *peer = next_token(&p), *status = next_token(&p);
        if (!g || !peer || !status)
            return;
        s->p2p[s->np2p++] = (struct p2p){atoi(g), atoi(peer), atoi(status)};
    } else if (strcmp(cmd, "cpu") == 0 && s->ncpus < DCGM_MAX_NUM_CPUS) {
        struct cpu *c = &s->cpus[s->ncpus];
        memset(c, 0, sizeof(*c));
        if (!(tok = next_token(&p)))
            return;
        c->id = atoi(tok);
        c->last = -1;
        while ((tok = next_token(&p))) {
            if (kv(tok, "cores", &val))
                sscanf(val, "%d-%d", &c->first, &c->last);
            else if (kv(tok, "serial", &val))
                copy_str(c->serial, val);
        }
        s->ncpus++;
    } else if (strcmp(cmd, "unknown") == 0) {
        char *ids = next_token(&p);
        for (char *q = ids; q && *q && s->nunknown < MAX_UNKNOWN_FIELDS;) {
            s->unknown[s->nunknown++] = (unsigned short)strtol(q, &q, 10);
            if (*q == ',')
                q++;
            else
                break;
        }
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

static struct nvswitch *find_switch(int id)
{
    for (int i = 0; i < st.nswitches; i++)
        if (st.switches[i].id == id)
            return &st.switches[i];
    return NULL;
}

/* link_decode splits a DCGM_FE_LINK entity id, a dcgm_link_t
 * (dcgm_structs.h, packed): bits 0-7 the parent's entity group
 * (DCGM_FE_GPU or DCGM_FE_SWITCH), bits 8-23 the port index, bits 24-31 the
 * GPU or switch id. go-dcgm builds it so (AddLinkEntityToGroup,
 * LinkGetLatestValues: byte 0 the group, bytes 1-2 the index little-endian,
 * byte 3 the parent). */
static void link_decode(int raw, int *type, int *index, int *parent)
{
    unsigned int u = (unsigned int)raw;
    *type = (int)(u & 0xff);
    *index = (int)((u >> 8) & 0xffff);
    *parent = (int)((u >> 24) & 0xff);
}

static int link_encode(int type, int index, int parent)
{
    return (int)((unsigned int)type | (unsigned int)index << 8 | (unsigned int)parent << 24);
}

/* link_state is a link's state: a linkstate line's, else up for the first
 * links of a GPU (down while DCGM cannot reach the GPU) or the ports of a
 * switch, else not supported, the default for GPUs (dcgm_structs.h,
 * dcgmNvLinkLinkState_t). */
static int link_state(int type, int parent, int index)
{
    for (int i = st.nlinkstates - 1; i >= 0; i--) {
        struct linkstate *l = &st.linkstates[i];
        if (l->type == type && l->parent == parent && l->index == index)
            return l->state;
    }
    if (type == DCGM_FE_SWITCH) {
        struct nvswitch *w = find_switch(parent);
        return w && index < w->links ? DcgmNvLinkLinkStateUp : DcgmNvLinkLinkStateNotSupported;
    }
    struct gpu *g = find_gpu(parent);
    if (!g || index >= g->links)
        return DcgmNvLinkLinkStateNotSupported;
    return g->status == ST_OK ? DcgmNvLinkLinkStateUp : DcgmNvLinkLinkStateDown;
}

/* link_exists: a link entity is valid when its parent exists and its index
 * is in range, whatever the link's state. For a GPU's link,
 * DcgmHostEngineHandler::GetIsValidEntityId (dcgmlib/src/
 * DcgmHostEngineHandler.cpp, DCGM 4.6.0) asks
 * DcgmCacheManager::GetIsValidEntityId (DcgmCacheManager.cpp), which checks
 * the GPU id and refuses an index at or above
 * DCGM_NVLINK_MAX_LINKS_PER_GPU * 2 (sic: twice the per-GPU limit of
 * dcgm_structs.h), so a link that is down or not supported is still a
 * valid entity (its fields read blank). A switch port is valid below
 * DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH when the NvSwitch module lists the
 * switch (GetIsValidEntityId, then GetAllEntitiesOfEntityGroup). */
static int link_exists(int raw)
{
    int type, index, parent;
    link_decode(raw, &type, &index, &parent);
    if (type == DCGM_FE_GPU)
        return find_gpu(parent) != NULL && index < DCGM_NVLINK_MAX_LINKS_PER_GPU * 2;
    if (type == DCGM_FE_SWITCH)
        return find_switch(parent) != NULL && index < DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH;
    return 0;
}

/* gpu_of returns the physical GPU an entity lives on, or NULL. */
static struct gpu *gpu_of(int group, int id)
{
    switch (group) {
    case DCGM_FE_GPU:
        return find_gpu(id);
    case DCGM_FE_LINK: {
        int type, index, parent;
        link_decode(id, &type, &index, &parent);
        return type == DCGM_FE_GPU ? find_gpu(parent) : NULL;
    }
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

static long long now_usec(void);

/* is_global: the field's scope is DCGM_FS_GLOBAL (dcgm_fields.h), as the
 * NVML and driver versions are. */
static int is_global(int field)
{
    const dcgm_field_meta_t *m = field_meta(field);
    return m && m->scope == DCGM_FS_GLOBAL;
}

/* watch_state tells whether a watch covers (entity, field): 0 no, 1 yes but
 * its first update cycle has not run yet, 2 yes with samples. */
static int watch_state(int eg, int id, int field)
{
    int state = 0;
    long long now = now_usec();
    /* A global-scope field has one watch whatever entity it is watched
     * or read on: DcgmCacheManager::AddFieldWatch logs "Fixing global field
     * watch to be correct scope" and watches it at DCGM_FE_NONE, and
     * GetLatestSample/GetSamples read it there ("Fixing entityGroupId for
     * global field"; dcgmlib/src/DcgmCacheManager.cpp, DCGM 4.6.0). */
    int global = is_global(field);
    for (int i = 0; i < MAX_WATCHES; i++) {
        struct watch *w = &watches[i];
        if (w->used && (global || group_has(&groups[w->group], eg, id)) &&
            field_group_has(&field_groups[w->field_group], field)) {
            if (now >= w->first_sample)
                return 2;
            state = 1;
        }
    }
    return state;
}

static int watched(int eg, int id, int field) { return watch_state(eg, id, field) != 0; }

static long long now_usec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* cpu_affinity_word is word w (64 CPUs each) of the fake's CPU affinity
 * mask of a GPU: the 16 CPUs of its NUMA node. */
static unsigned long long cpu_affinity_word(const struct gpu *g, int w)
{
    int first = g->numa * 16;
    if (g->numa < 0 || first / 64 != w)
        return 0;
    return 0xFFFFULL << (first % 64);
}

/* practical_entity maps a requested entity to the one DCGM reads a field
 * at, from the field's entity level: a GPU-level field read on a GPU
 * instance or compute instance is the parent GPU's value, and a GPU
 * instance-level field read on a compute instance is its GPU instance's
 * value; fields of the compute-instance level (and unknown fields) are read
 * at the entity asked for. That is DcgmCacheManager::SetPracticalEntityInfo
 * in dcgmlib/src/DcgmCacheManager.cpp (NVIDIA/DCGM): "This field can only be
 * watched / retrieved at the GPU level. If passed in an instance or compute
 * instance, then translate it to the corresponding GPU id."
 * A global-scope field is read at DCGM_FE_NONE whatever the entity (GPU,
 * GPU instance, compute instance): the cache manager keeps one global
 * watch for it (see watch_state). */
static void practical_entity(int eg, int id, int field, int *peg, int *pid)
{
    *peg = eg;
    *pid = id;
    const dcgm_field_meta_t *m = field_meta(field);
    if (m && m->scope == DCGM_FS_GLOBAL) {
        *peg = DCGM_FE_NONE;
        *pid = 0;
        return;
    }
    if (!m || (eg != DCGM_FE_GPU_I && eg != DCGM_FE_GPU_CI))
        return;
    struct ci *ci = eg == DCGM_FE_GPU_CI ? find_ci(id) : NULL;
    struct gi *gi = eg == DCGM_FE_GPU_I ? find_gi(id) : ci ? find_gi(ci->gi) : NULL;
    if (!gi)
        return;
    if (m->entityLevel == DCGM_FE_GPU) {
        *peg = DCGM_FE_GPU;
        *pid = gi->gpu;
    } else if (m->entityLevel == DCGM_FE_GPU_I && eg == DCGM_FE_GPU_CI) {
        *peg = DCGM_FE_GPU_I;
        *pid = gi->id;
    }
}

/* coerce gives a value the type of its field: DCGM stores each field with
 * the type of its metadata (DcgmCacheManager appends int64 values to int64
 * fields and doubles to double fields, e.g. DCGM_FI_DEV_POWER_USAGE is
 * DCGM_FT_DOUBLE in dcgm_fields.cpp), so a state file's "i:300" for a double
 * field reads as 300.0, and a blank becomes the blank of the field's type
 * (DCGM_INT64_BLANK + k <-> DCGM_FP64_BLANK + k <-> the DCGM_STR_* markers,
 * dcgm_structs.h). Values with an error status keep their int64 blank. */
static void coerce(struct value *v)
{
    const dcgm_field_meta_t *m = field_meta(v->field);
    if (!m || m->fieldType == v->type || v->status != DCGM_ST_OK)
        return;
    static const char *str_blanks[] = {DCGM_STR_BLANK, DCGM_STR_NOT_FOUND, DCGM_STR_NOT_SUPPORTED,
                                       DCGM_STR_NOT_PERMISSIONED};
    int blank = -1; /* 0..3: which sentinel, or -1 for a real value */
    switch (v->type) {
    case DCGM_FT_INT64:
        if (v->i >= DCGM_INT64_BLANK && v->i <= DCGM_INT64_NOT_PERMISSIONED)
            blank = (int)(v->i - DCGM_INT64_BLANK);
        else if (v->i >= DCGM_INT32_BLANK && v->i <= DCGM_INT32_NOT_PERMISSIONED)
            blank = (int)(v->i - DCGM_INT32_BLANK);
        break;
    case DCGM_FT_DOUBLE:
        if (v->d >= DCGM_FP64_BLANK && v->d <= DCGM_FP64_NOT_PERMISSIONED)
            blank = (int)(v->d - DCGM_FP64_BLANK);
        break;
    case DCGM_FT_STRING:
        for (int k = 0; k < 4; k++)
            if (strcmp(v->s, str_blanks[k]) == 0)
                blank = k;
        if (blank < 0)
            return; /* a string in a numeric field: leave it for the caller to trip on */
        break;
    default:
        return;
    }
    switch (m->fieldType) {
    case DCGM_FT_INT64:
        v->i = blank >= 0 ? DCGM_INT64_BLANK + blank : v->type == DCGM_FT_DOUBLE ? (long long)v->d : v->i;
        break;
    case DCGM_FT_DOUBLE:
        v->d = blank >= 0 ? DCGM_FP64_BLANK + blank : (double)v->i;
        break;
    case DCGM_FT_STRING:
        if (blank < 0)
            return; /* a number in a string field: keep it as given */
        copy_str(v->s, str_blanks[blank]);
        break;
    default:
        return;
    }
    v->type = m->fieldType;
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
    int on_switch = 0; /* a switch, or a switch port */
    if (eg == DCGM_FE_SWITCH || eg == DCGM_FE_LINK) {
        int type = DCGM_FE_SWITCH, index = 0, parent = id;
        if (eg == DCGM_FE_LINK)
            link_decode(id, &type, &index, &parent);
        on_switch = type == DCGM_FE_SWITCH;
        /* A switch the NvSwitch module no longer lists, or a link that is
         * not there, is not a valid entity. */
        if ((eg == DCGM_FE_SWITCH && !find_switch(id)) || (eg == DCGM_FE_LINK && !link_exists(id))) {
            out->status = DCGM_ST_BADPARAM;
            return;
        }
    }
    /* DCGM_FE_NONE is always a valid entity
     * (DcgmHostEngineHandler::GetIsValidEntityId); global fields live there. */
    int global = eg == DCGM_FE_NONE && is_global(field);
    if (!g && !on_switch && !global) {
        out->status = DCGM_ST_BADPARAM;
        return;
    }
    if (g && g->status != ST_OK) {
        out->status = DCGM_ST_GPU_IS_LOST;
        return;
    }
    if (!live) {
        int ws = watch_state(eg, id, field);
        if (ws == 0) {
            out->status = DCGM_ST_NOT_WATCHED;
            return;
        }
        if (ws == 1) {
            /* Watched, but no update cycle since: the cache holds no
             * sample (DcgmCacheManager answers DCGM_ST_NO_DATA). */
            out->status = DCGM_ST_NO_DATA;
            return;
        }
    }
    lookup_at(eg, id, field, out);
    out->group = eg; /* DCGM answers with the entity asked for */
    out->entity = id;
    coerce(out);
}

/* lookup_at finds the value of a field at its practical entity: a value the
 * state file sets there, or the fake's default. */
static void lookup_at(int eg, int id, int field, struct value *out)
{
    int peg, pid;
    practical_entity(eg, id, field, &peg, &pid);
    struct gpu *g = gpu_of(peg, pid);
    for (int i = st.nvalues - 1; i >= 0; i--) {
        struct value *v = &st.values[i];
        if (v->group == peg && v->entity == pid && v->field == field) {
            *out = *v;
            return;
        }
    }
    if (peg == DCGM_FE_SWITCH) {
        /* The PCI address of a switch; every other switch or port field
         * comes from the state file. */
        struct nvswitch *w = find_switch(pid);
        unsigned int dom = 0, bus = 0, dev = 0, fn = 0;
        if (w && sscanf(w->bus, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) == 4 && field >= DCGM_FI_DEV_NVSWITCH_PCIE_DOMAIN &&
            field <= DCGM_FI_DEV_NVSWITCH_PCIE_FUNCTION) {
            unsigned int parts[] = {dom, bus, dev, fn};
            out->status = DCGM_ST_OK;
            out->type = DCGM_FT_INT64;
            out->i = parts[field - DCGM_FI_DEV_NVSWITCH_PCIE_DOMAIN];
            return;
        }
    }
    if (peg == DCGM_FE_NONE && field == DCGM_FI_DRIVER_VERSION) {
        out->status = DCGM_ST_OK;
        out->type = DCGM_FT_STRING;
        copy_str(out->s, st.driver);
        return;
    }
    if (!g) {
        out->status = DCGM_ST_NO_DATA;
        out->type = DCGM_FT_INT64;
        out->i = DCGM_INT64_BLANK;
        return;
    }
    struct gi *gi = peg == DCGM_FE_GPU_I ? find_gi(pid) : NULL;
    struct ci *ci = peg == DCGM_FE_GPU_CI ? find_ci(pid) : NULL;
    out->status = DCGM_ST_OK;
    out->type = DCGM_FT_INT64;
    switch (field) {
    case DCGM_FI_DEV_NAME:
        /* On a GPU instance DCGM reports the MIG profile name
         * (DcgmCacheManager.cpp, DCGM_FI_DEV_GPU_NAME for DCGM_FE_GPU_I). */
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
    case DCGM_FI_DEV_CPU_AFFINITY_0:
    case DCGM_FI_DEV_CPU_AFFINITY_1:
    case DCGM_FI_DEV_CPU_AFFINITY_2:
    case DCGM_FI_DEV_CPU_AFFINITY_3:
        out->i = (long long)cpu_affinity_word(g, field - DCGM_FI_DEV_CPU_AFFINITY_0);
        return;
    case FIELD_XID: {
        long long best = -1;
        for (int i = 0; i < st.nxids; i++)
            if (st.xids[i].gpu == g->id && peg == DCGM_FE_GPU && (best < 0 || st.xids[i].ts >= st.xids[best].ts))
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
    case DCGM_ST_INSUFFICIENT_SIZE:
        return "An input argument is not large enough";
    case DCGM_ST_MAX_LIMIT:
        return "Max limit reached";
    case DCGM_ST_NOT_CONFIGURED:
        return "Setting not configured";
    case DCGM_ST_MODULE_NOT_LOADED:
        return "This request is serviced by a module of DCGM that is not currently loaded";
    default:
        return "Unknown error (fakedcgm)";
    }
}

/* ---- administration ------------------------------------------------------- */

/* dcgmInit initializes the fields module too: DcgmFieldGetById works after
 * it (DcgmApi.cpp calls DcgmFieldsInit in dcgmInit). */
API dcgmReturn_t dcgmInit(void)
{
    ENTER("dcgmInit");
    initialized = 1;
    build_table();
    fields_initialized = 1;
    RETURN(DCGM_ST_OK);
}

API dcgmReturn_t dcgmShutdown(void)
{
    ENTER("dcgmShutdown");
    drop_session();
    initialized = 0;
    fields_initialized = 0; /* dcgmShutdown calls DcgmFieldsTerm (DcgmApi.cpp) */
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
            /* dcgmMigEntityInfo_t (dcgm_structs.h): nvmlMigProfileId is the
             * "Unique profile ID for GPU or Compute instances" (for a
             * compute instance, its nvmlComputeInstanceProfileInfo_st id)
             * and nvmlProfileSlices the "Number of slices in the MIG
             * profile": the compute instance's own, not its GPU instance's. */
            c->info.nvmlMigProfileId = (unsigned int)(ci->profileid ? ci->profileid : gi->profileid);
            c->info.nvmlProfileSlices = (unsigned int)(ci->slices ? ci->slices : gi->slices);
        }
    }
    hierarchy->count = n;
    RETURN(DCGM_ST_OK);
}

/* ---- attributes, topology, links, entity lists ---------------------------- */

/* live_value reads one GPU field as live data, the way DCGM's
 * helperDeviceGetAttributes does (DcgmApi.cpp: it asks for the attribute
 * fields with DCGM_FV_FLAG_LIVE_DATA, so no watch is needed). */
static struct value live_value(int gpuId, int field)
{
    struct value v;
    lookup(DCGM_FE_GPU, gpuId, field, 1, &v);
    return v;
}

/* attr_str copies a string attribute; a value that is not a string (a
 * blank, an error) is copied as DCGM_STR_BLANK. */
static void attr_str(char *dst, size_t n, int gpuId, int field)
{
    struct value v = live_value(gpuId, field);
    snprintf(dst, n, "%s", v.status == DCGM_ST_OK && v.type == DCGM_FT_STRING ? v.s : DCGM_STR_BLANK);
}

/* attr_uint converts an int64 or double attribute to the unsigned int of
 * the struct; blanks become DCGM_INT32_BLANK, as DCGM's
 * nvcmvalue_int64_to_int32 and nvcmvalue_double_to_int32 do. */
static unsigned int attr_uint(int gpuId, int field)
{
    struct value v = live_value(gpuId, field);
    if (v.status != DCGM_ST_OK)
        return (unsigned int)DCGM_INT32_BLANK;
    if (v.type == DCGM_FT_DOUBLE)
        return DCGM_FP64_IS_BLANK(v.d) ? (unsigned int)DCGM_INT32_BLANK : (unsigned int)v.d;
    return DCGM_INT64_IS_BLANK(v.i) ? (unsigned int)DCGM_INT32_BLANK : (unsigned int)v.i;
}

/* dcgmGetDeviceAttributes checks the struct's version first
 * (tsapiEngineGetDeviceAttributes in DcgmApi.cpp: anything but
 * dcgmDeviceAttributes_version3 is DCGM_ST_VER_MISMATCH), then fills it from
 * the GPU's fields read as live data (helperDeviceGetAttributes). */
API dcgmReturn_t dcgmGetDeviceAttributes(dcgmHandle_t pDcgmHandle, unsigned int gpuId,
                                         dcgmDeviceAttributes_t *pDcgmDeviceAttr)
{
    ENTER("dcgmGetDeviceAttributes");
    if (!pDcgmDeviceAttr)
        RETURN(DCGM_ST_BADPARAM);
    if (pDcgmDeviceAttr->version != dcgmDeviceAttributes_version3)
        RETURN(DCGM_ST_VER_MISMATCH);
    HANDLE(pDcgmHandle); /* the hostengine is asked only once the struct passed the checks */
    struct gpu *g = find_gpu((int)gpuId);
    if (!g)
        RETURN(DCGM_ST_BADPARAM);
    unsigned int version = pDcgmDeviceAttr->version;
    memset(pDcgmDeviceAttr, 0, sizeof(*pDcgmDeviceAttr));
    pDcgmDeviceAttr->version = version;
    int id = (int)gpuId;
    dcgmDeviceIdentifiers_t *ids = &pDcgmDeviceAttr->identifiers;
    attr_str(ids->brandName, sizeof(ids->brandName), id, DCGM_FI_DEV_BRAND);
    attr_str(ids->deviceName, sizeof(ids->deviceName), id, DCGM_FI_DEV_NAME);
    attr_str(ids->pciBusId, sizeof(ids->pciBusId), id, DCGM_FI_DEV_PCI_BUSID);
    attr_str(ids->serial, sizeof(ids->serial), id, DCGM_FI_DEV_SERIAL);
    attr_str(ids->uuid, sizeof(ids->uuid), id, DCGM_FI_DEV_UUID);
    attr_str(ids->vbios, sizeof(ids->vbios), id, DCGM_FI_DEV_VBIOS_VERSION);
    attr_str(ids->inforomImageVersion, sizeof(ids->inforomImageVersion), id, DCGM_FI_DEV_INFOROM_IMAGE_VERSION);
    attr_str(ids->driverVersion, sizeof(ids->driverVersion), id, DCGM_FI_DRIVER_VERSION);
    dcgmDevicePowerLimits_t *pl = &pDcgmDeviceAttr->powerLimits;
    pl->curPowerLimit = attr_uint(id, DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS);
    pl->enforcedPowerLimit = attr_uint(id, DCGM_FI_DEV_BOARD_POWER_LIMIT_ENFORCED_WATTS);
    pl->defaultPowerLimit = attr_uint(id, DCGM_FI_DEV_BOARD_POWER_LIMIT_DEFAULT_WATTS);
    pl->maxPowerLimit = attr_uint(id, DCGM_FI_DEV_BOARD_POWER_LIMIT_MAX_WATTS);
    pl->minPowerLimit = attr_uint(id, DCGM_FI_DEV_BOARD_POWER_LIMIT_MIN_WATTS);
    pDcgmDeviceAttr->thermalSettings.slowdownTemp = attr_uint(id, DCGM_FI_DEV_GPU_TEMP_SLOWDOWN_CELSIUS);
    pDcgmDeviceAttr->thermalSettings.shutdownTemp = attr_uint(id, DCGM_FI_DEV_GPU_TEMP_SHUTDOWN_CELSIUS);
    dcgmDeviceMemoryUsage_t *mem = &pDcgmDeviceAttr->memoryUsage;
    mem->bar1Total = attr_uint(id, DCGM_FI_DEV_BAR1_TOTAL);
    mem->fbTotal = attr_uint(id, DCGM_FI_DEV_FB_TOTAL);
    mem->fbUsed = attr_uint(id, DCGM_FI_DEV_FB_USED);
    mem->fbFree = attr_uint(id, DCGM_FI_DEV_FB_FREE);
    RETURN(DCGM_ST_OK);
}

/* nvlink_path is the DCGM_TOPOLOGY_NVLINKn bit for n links: one-hot bits
 * from DCGM_TOPOLOGY_NVLINK1 = 0x100 upwards (dcgm_structs.h). */
static uint64_t nvlink_path(int links)
{
    if (links <= 0 || links > DCGM_NVLINK_MAX_LINKS_PER_GPU)
        return 0;
    return (uint64_t)DCGM_TOPOLOGY_NVLINK1 << (links - 1);
}

/* topology_path_legacy is TopologyPathToLegacy (dcgmlib/src/
 * DcgmTopology.cpp, DCGM 4.6.0): the PCI bits as they are, the NvLink count
 * (NvLinkScore: the bit width of the NvLink bits above bit 8) capped at
 * DCGM_NVLINK_MAX_LINKS_PER_GPU_LEGACY3 and set again as a one-hot
 * DCGM_TOPOLOGY_NVLINKn (NvLinkPathFromLinkQuantity). */
static dcgmGpuTopologyLevel_v1_t topology_path_legacy(uint64_t path)
{
    uint64_t pci = (uint64_t)DCGM_TOPOLOGY_PATH_PCI(path);
    uint64_t nv = (uint64_t)DCGM_TOPOLOGY_PATH_NVLINK(path) >> 8;
    int links = 0;
    while (nv) {
        links++;
        nv >>= 1;
    }
    if (links > DCGM_NVLINK_MAX_LINKS_PER_GPU_LEGACY3)
        links = DCGM_NVLINK_MAX_LINKS_PER_GPU_LEGACY3;
    return (dcgmGpuTopologyLevel_v1_t)(pci | nvlink_path(links));
}

/* dcgmGetDeviceTopology checks the version (tsapiEngineGetDeviceTopology in
 * dcgmlib/src/DcgmApi.cpp, DCGM 4.6.0: dcgmDeviceTopology_version2 is filled
 * as it is, dcgmDeviceTopology_version1 through FillDeviceTopologyPath's
 * legacy overload, with the path through TopologyPathToLegacy and the link
 * mask through NvLinkLinkMaskToLegacy, its low 32 bits; anything else is
 * DCGM_ST_VER_MISMATCH) and lists the path to every other GPU. An unknown
 * GPU is DCGM_ST_BADPARAM and a known GPU DCGM cannot reach is
 * DCGM_ST_GPU_IS_LOST (FillDeviceTopology). Two GPUs on one NUMA node are
 * DCGM_TOPOLOGY_CPU apart, others DCGM_TOPOLOGY_SYSTEM; two GPUs with
 * NvLinks are also joined by min(links) NvLinks. */
API dcgmReturn_t dcgmGetDeviceTopology(dcgmHandle_t pDcgmHandle, unsigned int gpuId,
                                       dcgmDeviceTopology_t *pDcgmDeviceTopology)
{
    ENTER("dcgmGetDeviceTopology");
    if (!pDcgmDeviceTopology)
        RETURN(DCGM_ST_BADPARAM);
    unsigned int version = pDcgmDeviceTopology->version;
    if (version != dcgmDeviceTopology_version2 && version != dcgmDeviceTopology_version1)
        RETURN(DCGM_ST_VER_MISMATCH);
    HANDLE(pDcgmHandle);
    struct gpu *g = find_gpu((int)gpuId);
    if (!g)
        RETURN(DCGM_ST_BADPARAM);
    if (g->status != ST_OK)
        RETURN(DCGM_ST_GPU_IS_LOST);
    dcgmDeviceTopology_v2 *t = pDcgmDeviceTopology;
    dcgmDeviceTopology_v1 *t1 = (dcgmDeviceTopology_v1 *)pDcgmDeviceTopology;
    if (version == dcgmDeviceTopology_version1)
        memset(t1, 0, sizeof(*t1));
    else
        memset(t, 0, sizeof(*t));
    unsigned long *affinity = version == dcgmDeviceTopology_version1 ? t1->cpuAffinityMask : t->cpuAffinityMask;
    for (int w = 0; w < DCGM_AFFINITY_BITMASK_ARRAY_SIZE && w < 4; w++)
        affinity[w] = (unsigned long)cpu_affinity_word(g, w);
    unsigned int n = 0;
    for (int i = 0; i < st.ngpus && n < DCGM_MAX_NUM_DEVICES - 1; i++) {
        struct gpu *o = &st.gpus[i];
        if (o == g || o->status != ST_OK)
            continue;
        int links = g->links < o->links ? g->links : o->links;
        uint64_t path = (o->numa == g->numa ? DCGM_TOPOLOGY_CPU : DCGM_TOPOLOGY_SYSTEM) | nvlink_path(links);
        uint64_t mask = links > 0 ? (links >= 64 ? ~0ULL : (1ULL << links) - 1) : 0;
        if (version == dcgmDeviceTopology_version1) {
            t1->gpuPaths[n].gpuId = (unsigned int)o->id;
            t1->gpuPaths[n].path = topology_path_legacy(path);
            t1->gpuPaths[n].localNvLinkIds = (unsigned int)(mask & 0xFFFFFFFFULL);
        } else {
            t->gpuPaths[n].gpuId = (unsigned int)o->id;
            t->gpuPaths[n].path = (dcgmGpuTopologyLevel_t)path;
            t->gpuPaths[n].localNvLinkIds = mask;
        }
        n++;
    }
    if (version == dcgmDeviceTopology_version1) {
        t1->version = version;
        t1->numGpus = n;
    } else {
        t->version = version;
        t->numGpus = n;
    }
    RETURN(DCGM_ST_OK);
}

/* p2p_status is the NvLink P2P status from GPU a to GPU b: a p2p line's,
 * else OK when both have NvLinks up, else NotSupported (a choice of the
 * fake: NVML answers nvmlDeviceGetP2PStatus(NVML_P2P_CAPS_INDEX_NVLINK) per
 * pair, and DCGM copies the answer, dcgmNvLinkGpuP2PStatus_t "mirrors
 * nvmlGpuP2PStatus_enum", dcgm_structs.h). */
static int p2p_status(const struct gpu *a, const struct gpu *b)
{
    for (int i = st.np2p - 1; i >= 0; i--)
        if (st.p2p[i].gpu == a->id && st.p2p[i].peer == b->id)
            return st.p2p[i].status;
    return a->links > 0 && b->links > 0 && a->status == ST_OK && b->status == ST_OK ? DcgmNvLinkP2pStatusOK
                                                                                   : DcgmNvLinkP2pStatusNotSupported;
}

/* dcgmGetNvLinkP2PStatus follows tsapiGetNvLinkP2PStatus (DcgmApi.cpp) and
 * DcgmCacheManager::CreateAllNvlinksP2PStatus / CreateNvlinkP2PStatus
 * (DcgmCacheManager.cpp, DCGM 4.6.0): version other than
 * dcgmNvLinkP2PStatus_version1 is DCGM_ST_VER_MISMATCH; numGpus 0 asks for
 * every GPU, and entry i is then GPU id i; otherwise the first numGpus
 * entries name the GPUs. linkStatus is indexed by the peer's GPU id: first
 * NotSupported for every GPU, then the status to each other active GPU
 * (a GPU's status to itself stays NotSupported); a detached GPU's row is
 * NotSupported throughout. */
API dcgmReturn_t dcgmGetNvLinkP2PStatus(dcgmHandle_t dcgmHandle, dcgmNvLinkP2PStatus_v1 *linkStatus)
{
    ENTER("dcgmGetNvLinkP2PStatus");
    if (!linkStatus)
        RETURN(DCGM_ST_BADPARAM);
    if (linkStatus->version != dcgmNvLinkP2PStatus_version1)
        RETURN(DCGM_ST_VER_MISMATCH);
    HANDLE(dcgmHandle);
    unsigned int n = linkStatus->numGpus;
    int all = n == 0;
    if (all || n > (unsigned int)st.ngpus)
        n = (unsigned int)st.ngpus;
    if (n > DCGM_MAX_NUM_DEVICES)
        n = DCGM_MAX_NUM_DEVICES;
    for (unsigned int i = 0; i < n; i++) {
        dcgmNvLinkGpuLinkP2PStatus_v1 *row = &linkStatus->gpus[i];
        if (all)
            row->entityId = i;
        for (int j = 0; j < DCGM_MAX_NUM_DEVICES; j++)
            row->linkStatus[j] = DcgmNvLinkP2pStatusNotSupported;
        struct gpu *g = find_gpu((int)row->entityId);
        if (!g || g->status != ST_OK)
            continue;
        for (int k = 0; k < st.ngpus; k++) {
            struct gpu *o = &st.gpus[k];
            if (o == g || o->status != ST_OK || o->id < 0 || o->id >= DCGM_MAX_NUM_DEVICES)
                continue;
            row->linkStatus[o->id] = (dcgmNvLinkGpuP2PStatus_t)p2p_status(g, o);
        }
    }
    if (all)
        linkStatus->numGpus = n;
    RETURN(DCGM_ST_OK);
}

/* fill_cpu fills one CPU of a hierarchy from a cpu line: its id and the
 * bitmask of the cores it owns. DCGM's sysmon module lists NVIDIA CPUs this
 * way, and helperFillCpuHierarchyV1/V2 (DcgmApi.cpp) copy at most
 * DCGM_MAX_NUM_CPUS of them. */
static void fill_cpu(const struct cpu *c, unsigned int *cpuId, dcgmCpuHierarchyOwnedCores_v1 *owned)
{
    *cpuId = (unsigned int)c->id;
    memset(owned, 0, sizeof(*owned));
    owned->version = dcgmCpuHierarchyOwnedCores_version1;
    for (int k = c->first; k >= 0 && k <= c->last && k < DCGM_MAX_NUM_CPU_CORES; k++)
        owned->bitmask[k / 64] |= 1ULL << (k % 64);
}

/* dcgmGetCpuHierarchy and dcgmGetCpuHierarchy_v2 check the version
 * (tsapiGetCpuHierarchy, tsapiGetCpuHierarchy_v2 in DcgmApi.cpp: version1,
 * version2, else DCGM_ST_VER_MISMATCH) and ask the sysmon module, which
 * refuses to load when no NVIDIA CPU is present (DcgmModuleSysmon's
 * constructor, modules/sysmon/DcgmModuleSysmon.cpp): without cpu lines the
 * answer is DCGM_ST_MODULE_NOT_LOADED (dcgm_agent.h lists it for these
 * calls). */
API dcgmReturn_t dcgmGetCpuHierarchy(dcgmHandle_t dcgmHandle, dcgmCpuHierarchy_v1 *cpuHierarchy)
{
    ENTER("dcgmGetCpuHierarchy");
    if (!cpuHierarchy)
        RETURN(DCGM_ST_BADPARAM);
    if (cpuHierarchy->version != dcgmCpuHierarchy_version1)
        RETURN(DCGM_ST_VER_MISMATCH);
    HANDLE(dcgmHandle);
    if (st.ncpus == 0)
        RETURN(DCGM_ST_MODULE_NOT_LOADED);
    memset(cpuHierarchy->cpus, 0, sizeof(cpuHierarchy->cpus));
    cpuHierarchy->numCpus = 0;
    for (int i = 0; i < st.ncpus && i < DCGM_MAX_NUM_CPUS; i++, cpuHierarchy->numCpus++)
        fill_cpu(&st.cpus[i], &cpuHierarchy->cpus[i].cpuId, &cpuHierarchy->cpus[i].ownedCores);
    RETURN(DCGM_ST_OK);
}

API dcgmReturn_t dcgmGetCpuHierarchy_v2(dcgmHandle_t dcgmHandle, dcgmCpuHierarchy_v2 *cpuHierarchy)
{
    ENTER("dcgmGetCpuHierarchy_v2");
    if (!cpuHierarchy)
        RETURN(DCGM_ST_BADPARAM);
    if (cpuHierarchy->version != dcgmCpuHierarchy_version2)
        RETURN(DCGM_ST_VER_MISMATCH);
    HANDLE(dcgmHandle);
    if (st.ncpus == 0)
        RETURN(DCGM_ST_MODULE_NOT_LOADED);
    memset(cpuHierarchy->cpus, 0, sizeof(cpuHierarchy->cpus));
    cpuHierarchy->numCpus = 0;
    for (int i = 0; i < st.ncpus && i < DCGM_MAX_NUM_CPUS; i++, cpuHierarchy->numCpus++) {
        fill_cpu(&st.cpus[i], &cpuHierarchy->cpus[i].cpuId, &cpuHierarchy->cpus[i].ownedCores);
        snprintf(cpuHierarchy->cpus[i].serial, sizeof(cpuHierarchy->cpus[i].serial), "%s", st.cpus[i].serial);
    }
    RETURN(DCGM_ST_OK);
}

/* fill_link_states sets a GPU's link states: its first links links are up
 * (down when DCGM cannot reach the GPU), the rest not supported, the default
 * for GPUs (dcgm_structs.h, dcgmNvLinkLinkState_t). */
static void fill_link_states(int type, int id, dcgmNvLinkLinkState_t *states, int n)
{
    for (int j = 0; j < n; j++)
        states[j] = (dcgmNvLinkLinkState_t)link_state(type, id, j);
}

/* dcgmGetNvLinkLinkStatus accepts dcgmNvLinkStatus_version5 and _version4
 * and answers DCGM_ST_VER_MISMATCH to any other version
 * (tsapiGetNvLinkLinkStatus in DcgmApi.cpp); go-dcgm passes version 5
 * (getNvLinkLinkStatus, topology.go: dcgmNvLinkStatus_v5, makeVersion5).
 * Version 5 has DCGM_NVLINK_MAX_LINKS_PER_GPU states per GPU, version 4
 * DCGM_NVLINK_MAX_LINKS_PER_GPU_LEGACY3; both have
 * DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH per switch (dcgm_structs.h). */
API dcgmReturn_t dcgmGetNvLinkLinkStatus(dcgmHandle_t dcgmHandle, dcgmNvLinkStatus_v5 *linkStatus)
{
    ENTER("dcgmGetNvLinkLinkStatus");
    if (!linkStatus)
        RETURN(DCGM_ST_BADPARAM);
    if (linkStatus->version != dcgmNvLinkStatus_version5 && linkStatus->version != dcgmNvLinkStatus_version4)
        RETURN(DCGM_ST_VER_MISMATCH);
    HANDLE(dcgmHandle);
    if (linkStatus->version == dcgmNvLinkStatus_version5) {
        dcgmNvLinkStatus_v5 *ls = linkStatus;
        memset(ls, 0, sizeof(*ls));
        ls->version = dcgmNvLinkStatus_version5;
        for (int i = 0; i < st.ngpus && ls->numGpus < DCGM_MAX_NUM_DEVICES; i++) {
            ls->gpus[ls->numGpus].entityId = (dcgm_field_eid_t)st.gpus[i].id;
            fill_link_states(DCGM_FE_GPU, st.gpus[i].id, ls->gpus[ls->numGpus].linkState, DCGM_NVLINK_MAX_LINKS_PER_GPU);
            ls->numGpus++;
        }
        for (int i = 0; i < st.nswitches && ls->numNvSwitches < DCGM_MAX_NUM_SWITCHES; i++) {
            ls->nvSwitches[ls->numNvSwitches].entityId = (dcgm_field_eid_t)st.switches[i].id;
            fill_link_states(DCGM_FE_SWITCH, st.switches[i].id, ls->nvSwitches[ls->numNvSwitches].linkState,
                             DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH);
            ls->numNvSwitches++;
        }
        RETURN(DCGM_ST_OK);
    }
    if (linkStatus->version == dcgmNvLinkStatus_version4) {
        dcgmNvLinkStatus_v4 *ls = (dcgmNvLinkStatus_v4 *)linkStatus;
        memset(ls, 0, sizeof(*ls));
        ls->version = dcgmNvLinkStatus_version4;
        for (int i = 0; i < st.ngpus && ls->numGpus < DCGM_MAX_NUM_DEVICES; i++) {
            ls->gpus[ls->numGpus].entityId = (dcgm_field_eid_t)st.gpus[i].id;
            fill_link_states(DCGM_FE_GPU, st.gpus[i].id, ls->gpus[ls->numGpus].linkState,
                             DCGM_NVLINK_MAX_LINKS_PER_GPU_LEGACY3);
            ls->numGpus++;
        }
        for (int i = 0; i < st.nswitches && ls->numNvSwitches < DCGM_MAX_NUM_SWITCHES; i++) {
            ls->nvSwitches[ls->numNvSwitches].entityId = (dcgm_field_eid_t)st.switches[i].id;
            fill_link_states(DCGM_FE_SWITCH, st.switches[i].id, ls->nvSwitches[ls->numNvSwitches].linkState,
                             DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH);
            ls->numNvSwitches++;
        }
        RETURN(DCGM_ST_OK);
    }
    RETURN(DCGM_ST_VER_MISMATCH);
}

/* dcgmGetEntityGroupEntities lists the entities of a group: GPUs, GPU
 * instances, compute instances; NVSwitches and NvLinks, which DCGM gets from
 * its NvSwitch module (DcgmHostEngineHandler::GetAllEntitiesOfEntityGroup:
 * DCGM_NVSWITCH_SR_GET_SWITCH_IDS, DCGM_NVSWITCH_SR_GET_LINK_IDS), so the
 * links listed are the switches' ports, as dcgm_link_t ids; other groups
 * list none.
 * DCGM_GEGE_FLAG_ONLY_SUPPORTED leaves out entities on GPUs DCGM cannot use.
 * *numEntities is capacity in, count out; a count above the capacity is
 * DCGM_ST_INSUFFICIENT_SIZE (tsapiGetEntityGroupEntities in DcgmApi.cpp). */
API dcgmReturn_t dcgmGetEntityGroupEntities(dcgmHandle_t dcgmHandle, dcgm_field_entity_group_t entityGroup,
                                            dcgm_field_eid_t *entities, int *numEntities, unsigned int flags)
{
    ENTER("dcgmGetEntityGroupEntities");
    if (!entities || !numEntities)
        RETURN(DCGM_ST_BADPARAM);
    HANDLE(dcgmHandle);
    int capacity = *numEntities, n = 0;
    int only = (flags & DCGM_GEGE_FLAG_ONLY_SUPPORTED) != 0;
#define ADD_ENTITY(id_)                                                                                              \
    do {                                                                                                             \
        if (n < capacity)                                                                                            \
            entities[n] = (dcgm_field_eid_t)(id_);                                                                   \
        n++;                                                                                                         \
    } while (0)
    switch (entityGroup) {
    case DCGM_FE_GPU:
        for (int i = 0; i < st.ngpus; i++)
            if (!only || st.gpus[i].status == ST_OK)
                ADD_ENTITY(st.gpus[i].id);
        break;
    case DCGM_FE_GPU_I:
        for (int i = 0; i < st.ngis; i++) {
            struct gpu *g = find_gpu(st.gis[i].gpu);
            if (g && (!only || g->status == ST_OK))
                ADD_ENTITY(st.gis[i].id);
        }
        break;
    case DCGM_FE_GPU_CI:
        for (int i = 0; i < st.ncis; i++) {
            struct gpu *g = gpu_of(DCGM_FE_GPU_CI, st.cis[i].id);
            if (g && (!only || g->status == ST_OK))
                ADD_ENTITY(st.cis[i].id);
        }
        break;
    case DCGM_FE_SWITCH:
        for (int i = 0; i < st.nswitches; i++)
            ADD_ENTITY(st.switches[i].id);
        break;
    case DCGM_FE_LINK:
        for (int i = 0; i < st.nswitches; i++)
            for (int j = 0; j < DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH; j++)
                if (link_state(DCGM_FE_SWITCH, st.switches[i].id, j) != DcgmNvLinkLinkStateNotSupported)
                    ADD_ENTITY(link_encode(DCGM_FE_SWITCH, j, st.switches[i].id));
        break;
    default:
        break;
    }
#undef ADD_ENTITY
    *numEntities = n;
    RETURN(n > capacity ? DCGM_ST_INSUFFICIENT_SIZE : DCGM_ST_OK);
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
    case DCGM_FE_SWITCH:
        return find_switch(id) != NULL;
    case DCGM_FE_LINK:
        return link_exists(id);
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
        snprintf(groups[i].name, sizeof(groups[i].name), "%s", groupName);
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

/* dcgmGroupGetInfo: helperGroupGetInfo (dcgmlib/src/DcgmApi.cpp, DCGM 4.6.0)
 * refuses a NULL struct with DCGM_ST_BADPARAM and any version but
 * dcgmGroupInfo_version3 (the range version3..dcgmGroupInfo_version) with
 * DCGM_ST_VER_MISMATCH, then copies the group's name, count and entities;
 * a group that does not exist is DCGM_ST_NOT_CONFIGURED (dcgm_agent.h,
 * dcgmGroupGetInfo). */
API dcgmReturn_t dcgmGroupGetInfo(dcgmHandle_t pDcgmHandle, dcgmGpuGrp_t groupId, dcgmGroupInfo_t *pDcgmGroupInfo)
{
    ENTER("dcgmGroupGetInfo");
    if (!pDcgmGroupInfo)
        RETURN(DCGM_ST_BADPARAM);
    if (pDcgmGroupInfo->version < dcgmGroupInfo_version3 || pDcgmGroupInfo->version > dcgmGroupInfo_version)
        RETURN(DCGM_ST_VER_MISMATCH);
    HANDLE(pDcgmHandle);
    struct group *g = get_group(groupId);
    if (!g)
        RETURN(DCGM_ST_NOT_CONFIGURED);
    snprintf(pDcgmGroupInfo->groupName, sizeof(pDcgmGroupInfo->groupName), "%s", g->name);
    pDcgmGroupInfo->count = 0;
    for (int i = 0; i < g->nentities && i < DCGM_GROUP_MAX_ENTITIES_V2; i++)
        pDcgmGroupInfo->entityList[pDcgmGroupInfo->count++] = g->entities[i];
    RETURN(DCGM_ST_OK);
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
    /* A hostengine checks every id against its own field table and refuses
     * the group when one is unknown (DCGM 4.6.0, DcgmFieldGroupManager::
     * AddFieldGroup: DCGM_ST_BADPARAM), so a field newer than the hostengine
     * takes the whole group down with it. */
    for (int i = 0; i < numFieldIds; i++)
        for (int k = 0; k < st.nunknown; k++)
            if (fieldIds[i] == st.unknown[k])
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
            watches[i] = (struct watch){1, groupId, fieldGroupId, updateFreq, maxKeepAge, maxKeepSamples,
                                        now_usec() + updateFreq};
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

/* dcgmUpdateAllFields runs an update cycle: every watch has samples from
 * now on. Waiting or not makes no difference to the fake, whose cycle is
 * instant. */
API dcgmReturn_t dcgmUpdateAllFields(dcgmHandle_t pDcgmHandle, int waitForUpdate)
{
    (void)waitForUpdate;
    ENTER("dcgmUpdateAllFields");
    HANDLE(pDcgmHandle);
    long long now = now_usec();
    for (int i = 0; i < MAX_WATCHES; i++)
        if (watches[i].used && watches[i].first_sample > now)
            watches[i].first_sample = now;
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

/* struct fact is one row of DCGM's field table: the arguments DCGM 4.6.0
 * passes to DcgmFieldsPopulateOneFieldWithFormatting in
 * dcgmlib/src/dcgm_fields.cpp (NVIDIA/DCGM), for every field gpu-exporter's
 * catalog reads, the inventory reads, dcgmGetDeviceAttributes reads and
 * go-dcgm's GetDeviceInfo helpers read. Field ids are the dcgm_fields.h
 * macros, so they come from the headers this file is compiled against; the
 * rows were written from DCGM's table, not from gpu-exporter's catalog, so
 * that the fake can disagree with the catalog. The unit is the dmon unit
 * string after DCGM's copy into char[4] (SafeCopyTo truncates "MB/s"). */
struct fact {
    unsigned short id;
    char type;
    unsigned char size;
    const char *tag;
    int scope;
    int nvml;
    dcgm_field_entity_group_t level;
    const char *shortName, *unit;
};

static const struct fact facts[] = {
    {DCGM_FI_SYSTEM_DRIVER_VERSION, DCGM_FT_STRING, 0, "driver_version", DCGM_FS_GLOBAL, 0, DCGM_FE_NONE, "DRVER", "#"},
    {DCGM_FI_SYSTEM_NVML_VERSION, DCGM_FT_STRING, 0, "nvml_version", DCGM_FS_GLOBAL, 0, DCGM_FE_NONE, "NVVER", "#"},
    {DCGM_FI_DEV_GPU_NAME, DCGM_FT_STRING, 0, "name", DCGM_FS_DEVICE, 0, DCGM_FE_GPU_CI, "DVNAM", ""},
    {DCGM_FI_DEV_GPU_BRAND, DCGM_FT_STRING, 0, "brand", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "DVBRN", ""},
    {DCGM_FI_DEV_BOARD_SERIAL, DCGM_FT_STRING, 0, "serial_number", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "SRNUM", ""},
    {DCGM_FI_DEV_GPU_UUID, DCGM_FT_STRING, 0, "uuid", DCGM_FS_DEVICE, 0, DCGM_FE_GPU_CI, "UUID#", ""},
    {DCGM_FI_DEV_GPU_MINOR_NUMBER, DCGM_FT_INT64, 8, "minor_number", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "MNNUM", ""},
    {DCGM_FI_DEV_INFOROM_OEM_VERSION, DCGM_FT_STRING, 0, "oem_inforom_version", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "OEMVR", "#"},
    {DCGM_FI_DEV_PCI_BUS_ID, DCGM_FT_STRING, 0, "pci_busid", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "PCBID", "#"},
    {DCGM_FI_DEV_CPU_AFFINITY_0, DCGM_FT_INT64, 8, "cpu_affinity_0", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "CAFF0", ""},
    {DCGM_FI_DEV_CPU_AFFINITY_1, DCGM_FT_INT64, 8, "cpu_affinity_1", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "CAFF1", ""},
    {DCGM_FI_DEV_CPU_AFFINITY_2, DCGM_FT_INT64, 8, "cpu_affinity_2", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "CAFF2", ""},
    {DCGM_FI_DEV_CPU_AFFINITY_3, DCGM_FT_INT64, 8, "cpu_affinity_3", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "CAFF3", ""},
    {DCGM_FI_DEV_INFOROM_ECC_VERSION, DCGM_FT_STRING, 0, "ecc_inforom_version", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "EIVER", "#"},
    {DCGM_FI_DEV_INFOROM_POWER_VERSION, DCGM_FT_STRING, 0, "power_inforom_version", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "PIVER", "#"},
    {DCGM_FI_DEV_INFOROM_IMAGE_VERSION, DCGM_FT_STRING, 0, "inforom_image_version", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "IIVER", "#"},
    {DCGM_FI_DEV_VBIOS_VERSION, DCGM_FT_STRING, 0, "vbios_version", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "VBVER", ""},
    {DCGM_FI_DEV_BAR1_TOTAL, DCGM_FT_INT64, 8, "bar1_total", DCGM_FS_DEVICE, 0, DCGM_FE_GPU_CI, "B1TTL", ""},
    {DCGM_FI_DEV_SM_CLOCK, DCGM_FT_INT64, 8, "sm_clock", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "SMCLK", ""},
    {DCGM_FI_DEV_MEM_CLOCK, DCGM_FT_INT64, 8, "memory_clock", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "MMCLK", ""},
    {DCGM_FI_DEV_CLOCKS_EVENT_REASONS, DCGM_FT_INT64, 0, "current_clocks_event_reasons", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "DVCCTR", ""},
    {DCGM_FI_DEV_MEMORY_TEMP_CELSIUS, DCGM_FT_INT64, 8, "memory_temp", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "MMTMP", "C"},
    {DCGM_FI_DEV_GPU_TEMP_CELSIUS, DCGM_FT_INT64, 8, "gpu_temp", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "TMPTR", " C"},
    {DCGM_FI_DEV_BOARD_POWER_WATTS, DCGM_FT_DOUBLE, 8, "power_usage", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "POWER", " W"},
    {DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, DCGM_FT_INT64, 8, "total_energy_consumption", DCGM_FS_DEVICE, NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, DCGM_FE_GPU, "TOTEC", " mJ"},
    {DCGM_FI_DEV_GPU_TEMP_SLOWDOWN_CELSIUS, DCGM_FT_INT64, 8, "slowdown_temp", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "SDTMP", " C"},
    {DCGM_FI_DEV_GPU_TEMP_SHUTDOWN_CELSIUS, DCGM_FT_INT64, 8, "shutdown_temp", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "SHTMP", " C"},
    {DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS, DCGM_FT_DOUBLE, 8, "power_management_limit", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "PMLMT", " W"},
    {DCGM_FI_DEV_BOARD_POWER_LIMIT_MIN_WATTS, DCGM_FT_DOUBLE, 8, "power_management_limit_min", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "PMMIN", " W"},
    {DCGM_FI_DEV_BOARD_POWER_LIMIT_MAX_WATTS, DCGM_FT_DOUBLE, 8, "power_management_limit_max", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "PMMAX", " W"},
    {DCGM_FI_DEV_BOARD_POWER_LIMIT_DEFAULT_WATTS, DCGM_FT_DOUBLE, 8, "power_management_limit_default", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "PMDEF", " W"},
    {DCGM_FI_DEV_BOARD_POWER_LIMIT_ENFORCED_WATTS, DCGM_FT_DOUBLE, 8, "enforced_power_limit", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "EPLMT", " W"},
    {DCGM_FI_DEV_PCIE_REPLAY_TOTAL, DCGM_FT_INT64, 8, "pcie_replay_counter", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "RPCTR", "#"},
    {DCGM_FI_DEV_GPU_UTIL_RATIO, DCGM_FT_INT64, 8, "gpu_utilization", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "GPUTL", ""},
    {DCGM_FI_DEV_MEM_COPY_UTIL, DCGM_FT_INT64, 8, "mem_copy_utilization", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "MCUTL", ""},
    {DCGM_FI_DEV_ENC_UTIL, DCGM_FT_INT64, 8, "enc_utilization", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "ECUTL", ""},
    {DCGM_FI_DEV_DEC_UTIL, DCGM_FT_INT64, 8, "dec_utilization", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "DCUTL", ""},
    {DCGM_FI_DEV_XID_ERROR, DCGM_FT_INT64, 8, "xid_errors", DCGM_FS_DEVICE, 0, DCGM_FE_GPU_CI, "XIDER", ""},
    {DCGM_FI_DEV_PCIE_MAX_LINK_GEN, DCGM_FT_INT64, 8, "pcie_max_link_gen", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "PCIMG", ""},
    {DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH, DCGM_FT_INT64, 8, "pcie_max_link_width", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "PCIMW", ""},
    {DCGM_FI_DEV_POWER_VIOLATION, DCGM_FT_INT64, 8, "power_violation", DCGM_FS_DEVICE, NVML_FI_DEV_PERF_POLICY_POWER, DCGM_FE_GPU, "PVIOL", ""},
    {DCGM_FI_DEV_THERMAL_VIOLATION, DCGM_FT_INT64, 8, "thermal_violation", DCGM_FS_DEVICE, NVML_FI_DEV_PERF_POLICY_THERMAL, DCGM_FE_GPU, "TVIOL", ""},
    {DCGM_FI_DEV_SYNC_BOOST_VIOLATION, DCGM_FT_INT64, 8, "sync_boost_violation", DCGM_FS_DEVICE, NVML_FI_DEV_PERF_POLICY_SYNC_BOOST, DCGM_FE_GPU, "SBVIO", ""},
    {DCGM_FI_DEV_BOARD_LIMIT_VIOLATION, DCGM_FT_INT64, 8, "board_limit_violation", DCGM_FS_DEVICE, NVML_FI_DEV_PERF_POLICY_BOARD_LIMIT, DCGM_FE_GPU, "BLVIO", ""},
    {DCGM_FI_DEV_LOW_UTIL_VIOLATION, DCGM_FT_INT64, 8, "low_util_violation", DCGM_FS_DEVICE, NVML_FI_DEV_PERF_POLICY_LOW_UTILIZATION, DCGM_FE_GPU, "LUVIO", ""},
    {DCGM_FI_DEV_RELIABILITY_VIOLATION, DCGM_FT_INT64, 8, "reliability_violation", DCGM_FS_DEVICE, NVML_FI_DEV_PERF_POLICY_RELIABILITY, DCGM_FE_GPU, "RVIOL", ""},
    /* DCGM's table gives the vGPU licence status the vGPU level, yet its
     * cache manager reads it on a GPU (nvmlDeviceGetGridLicensableFeatures,
     * DcgmCacheManager.cpp case DCGM_FI_DEV_VGPU_LICENSE_STATUS). */
    {DCGM_FI_DEV_VGPU_LICENSE_STATUS, DCGM_FT_INT64, 8, "vgpu_instance_license_status", DCGM_FS_DEVICE, 0, DCGM_FE_VGPU, "VLCST", ""},
    {DCGM_FI_DEV_FB_TOTAL, DCGM_FT_INT64, 8, "fb_total", DCGM_FS_DEVICE, 0, DCGM_FE_GPU_CI, "FBTTL", ""},
    {DCGM_FI_DEV_FB_FREE, DCGM_FT_INT64, 8, "fb_free", DCGM_FS_DEVICE, 0, DCGM_FE_GPU_CI, "FBFRE", ""},
    {DCGM_FI_DEV_FB_USED, DCGM_FT_INT64, 8, "fb_used", DCGM_FS_DEVICE, 0, DCGM_FE_GPU_CI, "FBUSD", ""},
    {DCGM_FI_DEV_FB_RESERVED, DCGM_FT_INT64, 8, "fb_resv", DCGM_FS_DEVICE, 0, DCGM_FE_GPU_CI, "FBRSV", ""},
    {DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, DCGM_FT_INT64, 8, "ecc_sbe_volatile_total", DCGM_FS_DEVICE, NVML_FI_DEV_ECC_SBE_VOL_TOTAL, DCGM_FE_GPU, "ESVTL", ""},
    {DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, DCGM_FT_INT64, 8, "ecc_dbe_volatile_total", DCGM_FS_DEVICE, NVML_FI_DEV_ECC_DBE_VOL_TOTAL, DCGM_FE_GPU, "EDVTL", ""},
    {DCGM_FI_DEV_ECC_SBE_AGG_TOTAL, DCGM_FT_INT64, 8, "ecc_sbe_aggregate_total", DCGM_FS_DEVICE, NVML_FI_DEV_ECC_SBE_AGG_TOTAL, DCGM_FE_GPU, "ESATL", ""},
    {DCGM_FI_DEV_ECC_DBE_AGG_TOTAL, DCGM_FT_INT64, 8, "ecc_dbe_aggregate_total", DCGM_FS_DEVICE, NVML_FI_DEV_ECC_DBE_AGG_TOTAL, DCGM_FE_GPU, "EDATL", ""},
    {DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL, DCGM_FT_INT64, 8, "retired_pages_sbe", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "RPSBE", ""},
    {DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL, DCGM_FT_INT64, 8, "retired_pages_dbe", DCGM_FS_DEVICE, NVML_FI_DEV_RETIRED_DBE, DCGM_FE_GPU, "RPDBE", ""},
    {DCGM_FI_DEV_PAGE_RETIRED_PENDING, DCGM_FT_INT64, 8, "retired_pages_pending", DCGM_FS_DEVICE, NVML_FI_DEV_RETIRED_PENDING, DCGM_FE_GPU, "RPPEN", ""},
    {DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL, DCGM_FT_INT64, 8, "uncorrectable_remapped_rows", DCGM_FS_DEVICE, NVML_FI_DEV_REMAPPED_UNC, DCGM_FE_GPU, "URMPS", ""},
    {DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL, DCGM_FT_INT64, 8, "correctable_remapped_rows", DCGM_FS_DEVICE, NVML_FI_DEV_REMAPPED_COR, DCGM_FE_GPU, "CRMPS", ""},
    {DCGM_FI_DEV_ROW_REMAP_FAILED, DCGM_FT_INT64, 8, "row_remap_failure", DCGM_FS_DEVICE, NVML_FI_DEV_REMAPPED_FAILURE, DCGM_FE_GPU, "RRF", ""},
    {DCGM_FI_DEV_ROW_REMAP_PENDING, DCGM_FT_INT64, 8, "row_remap_pending", DCGM_FS_DEVICE, NVML_FI_DEV_REMAPPED_PENDING, DCGM_FE_GPU, "RRP", ""},
    {DCGM_FI_DEV_NVLINK_THROUGHPUT_TOTAL, DCGM_FT_INT64, 8, "nvlink_throughput_total", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "NBWLT", "MB/"},
    {DCGM_FI_DEV_NVLINK_THROUGHPUT_L0, DCGM_FT_INT64, 8, "nvlink_throughput_l0", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "NBWL0", "MB/"},
    {DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO, DCGM_FT_DOUBLE, 0, "gr_engine_active", DCGM_FS_DEVICE, 0, DCGM_FE_GPU_CI, "GRACT", ""},
    {DCGM_FI_PROF_SM_UTIL_RATIO, DCGM_FT_DOUBLE, 0, "sm_active", DCGM_FS_DEVICE, 0, DCGM_FE_GPU_CI, "SMACT", ""},
    {DCGM_FI_PROF_SM_OCCUPANCY_RATIO, DCGM_FT_DOUBLE, 0, "sm_occupancy", DCGM_FS_DEVICE, 0, DCGM_FE_GPU_CI, "SMOCC", ""},
    {DCGM_FI_PROF_TENSOR_UTIL_RATIO, DCGM_FT_DOUBLE, 0, "tensor_active", DCGM_FS_DEVICE, 0, DCGM_FE_GPU_CI, "TENSO", ""},
    {DCGM_FI_PROF_DRAM_UTIL_RATIO, DCGM_FT_DOUBLE, 0, "dram_active", DCGM_FS_DEVICE, 0, DCGM_FE_GPU_I, "DRAMA", ""},
    {DCGM_FI_PROF_FP64_UTIL_RATIO, DCGM_FT_DOUBLE, 0, "fp64_active", DCGM_FS_DEVICE, 0, DCGM_FE_GPU_CI, "FP64A", ""},
    {DCGM_FI_PROF_FP32_UTIL_RATIO, DCGM_FT_DOUBLE, 0, "fp32_active", DCGM_FS_DEVICE, 0, DCGM_FE_GPU_CI, "FP32A", ""},
    {DCGM_FI_PROF_FP16_UTIL_RATIO, DCGM_FT_DOUBLE, 0, "fp16_active", DCGM_FS_DEVICE, 0, DCGM_FE_GPU_CI, "FP16A", ""},
    {DCGM_FI_PROF_PCIE_TX_BYTES, DCGM_FT_INT64, 0, "pcie_tx_bytes", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "PCITX", ""},
    {DCGM_FI_PROF_PCIE_RX_BYTES, DCGM_FT_INT64, 0, "pcie_rx_bytes", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "PCIRX", ""},
    {DCGM_FI_PROF_NVLINK_TX_BYTES, DCGM_FT_INT64, 0, "nvlink_tx_bytes", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "NVLTX", ""},
    {DCGM_FI_PROF_NVLINK_RX_BYTES, DCGM_FT_INT64, 0, "nvlink_rx_bytes", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "NVLRX", ""},
    {DCGM_FI_DEV_GPU_RECOVERY_ACTION, DCGM_FT_INT64, 8, "gpu_recovery_action", DCGM_FS_DEVICE,
     NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, DCGM_FE_GPU, "GPURECOV", ""},
    {DCGM_FI_DEV_FABRIC_MANAGER_STATUS, DCGM_FT_INT64, 8, "fabric_manager_status", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "FMSTA", ""},
    {DCGM_FI_DEV_FABRIC_MANAGER_ERROR, DCGM_FT_INT64, 8, "fabric_manager_failure_code", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "FMFRC", ""},
    {DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL, DCGM_FT_INT64, 8, "nvlink_flit_crc_error_count_total", DCGM_FS_DEVICE,
     NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL, DCGM_FE_GPU, "NFELT", ""},
    {DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_TOTAL, DCGM_FT_INT64, 8, "nvlink_data_crc_error_count_total", DCGM_FS_DEVICE,
     NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL, DCGM_FE_GPU, "NDELT", ""},
    {DCGM_FI_DEV_NVLINK_REPLAY_ERROR_TOTAL, DCGM_FT_INT64, 8, "nvlink_replay_error_count_total", DCGM_FS_DEVICE,
     NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL, DCGM_FE_GPU, "NRELT", ""},
    {DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_TOTAL, DCGM_FT_INT64, 8, "nvlink_recovery_error_count_total", DCGM_FS_DEVICE,
     NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL, DCGM_FE_GPU, "NRCLT", ""},
    {DCGM_FI_DEV_NVLINK_TX_THROUGHPUT_TOTAL, DCGM_FT_INT64, 8, "nvlink_tx_throughput_total", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "NTXBWLT", "MB/"},
    {DCGM_FI_DEV_NVLINK_RX_THROUGHPUT_TOTAL, DCGM_FT_INT64, 8, "nvlink_rx_throughput_total", DCGM_FS_DEVICE, 0, DCGM_FE_GPU, "NRXBWLT", "MB/"},
    {DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS, DCGM_FT_INT64, 8, "nvswitch_current_temperature", DCGM_FS_ENTITY, 0, DCGM_FE_SWITCH, "TMP01", "C"},
    {DCGM_FI_DEV_NVSWITCH_THROUGHPUT_TX, DCGM_FT_INT64, 8, "nvswitch_throughput_tx", DCGM_FS_ENTITY, 0, DCGM_FE_SWITCH, "SWTX", ""},
    {DCGM_FI_DEV_NVSWITCH_THROUGHPUT_RX, DCGM_FT_INT64, 8, "nvswitch_throughput_rx", DCGM_FS_ENTITY, 0, DCGM_FE_SWITCH, "SWRX", ""},
    {DCGM_FI_DEV_SXID_FATAL_ERROR, DCGM_FT_INT64, 8, "nvswitch_fatal_error", DCGM_FS_ENTITY, 0, DCGM_FE_SWITCH, "SEN00", ""},
    {DCGM_FI_DEV_SXID_NON_FATAL_ERROR, DCGM_FT_INT64, 8, "nvswitch_non_fatal_error", DCGM_FS_ENTITY, 0, DCGM_FE_SWITCH, "SEN01", ""},
    {DCGM_FI_DEV_NVSWITCH_LINK_FATAL_ERRORS, DCGM_FT_INT64, 8, "nvswitch_link_fatal_errors", DCGM_FS_ENTITY, 0, DCGM_FE_LINK, "SWLNKFE", ""},
    {DCGM_FI_DEV_NVSWITCH_LINK_NON_FATAL_ERRORS, DCGM_FT_INT64, 8, "nvswitch_link_non_fatal_errors", DCGM_FS_ENTITY, 0, DCGM_FE_LINK, "SWLNKNF", ""},
    {DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX, DCGM_FT_INT64, 8, "nvlink_throughput_tx", DCGM_FS_ENTITY, 0, DCGM_FE_LINK, "SWLNKTX", ""},
    {DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_RX, DCGM_FT_INT64, 8, "nvswitch_link_throughput_rx", DCGM_FS_ENTITY, 0, DCGM_FE_LINK, "SWLNKRX", ""},
    {DCGM_FI_DEV_NVSWITCH_LINK_STATUS, DCGM_FT_INT64, 8, "nvswitch_nvlink_status", DCGM_FS_ENTITY, 0, DCGM_FE_LINK, "SWNVLNKST", ""},
};

#define NFACTS (sizeof(facts) / sizeof(facts[0]))

static dcgm_field_meta_t metas[NFACTS];
static dcgm_field_output_format_t formats[NFACTS];
static const dcgm_field_meta_t *meta_by_id[DCGM_FI_MAX_FIELDS];
static int table_built;        /* metas[] and meta_by_id[] are filled */
/* fields_initialized (declared above): DcgmFieldsInit was called, and no
 * DcgmFieldsTerm since. */

/* build_table fills the metadata table once. */
static void build_table(void)
{
    if (table_built)
        return;
    memset(meta_by_id, 0, sizeof(meta_by_id));
    for (size_t i = 0; i < NFACTS; i++) {
        const struct fact *f = &facts[i];
        dcgm_field_meta_t *m = &metas[i];
        memset(m, 0, sizeof(*m));
        memset(&formats[i], 0, sizeof(formats[i]));
        m->fieldId = f->id;
        m->fieldType = f->type;
        m->size = f->size;
        snprintf(m->tag, sizeof(m->tag), "%s", f->tag);
        m->scope = f->scope;
        m->nvmlFieldId = f->nvml;
        m->entityLevel = f->level;
        snprintf(formats[i].shortName, sizeof(formats[i].shortName), "%s", f->shortName);
        snprintf(formats[i].unit, sizeof(formats[i].unit), "%s", f->unit);
        m->valueFormat = &formats[i];
        if (f->id < DCGM_FI_MAX_FIELDS)
            meta_by_id[f->id] = m;
    }
    table_built = 1;
}

/* field_meta returns the metadata of a field, or NULL when the fake does not
 * know it (whether or not the fields module is initialized: the fake's
 * hostengine side always knows its fields). */
static const dcgm_field_meta_t *field_meta(int id)
{
    if (id <= 0 || id >= DCGM_FI_MAX_FIELDS)
        return NULL;
    build_table();
    return meta_by_id[id];
}

/* DcgmFieldsInit is idempotent and returns 0 (dcgm_fields.cpp: "if
 * (dcgmFieldsInitialized) return 0;"). */
API int DcgmFieldsInit(void)
{
    pthread_mutex_lock(&mu);
    build_table();
    fields_initialized = 1;
    pthread_mutex_unlock(&mu);
    return 0;
}

/* DcgmFieldsTerm frees the table; DcgmFieldGetById then returns NULL until
 * the next DcgmFieldsInit (dcgm_fields.cpp). */
API int DcgmFieldsTerm(void)
{
    pthread_mutex_lock(&mu);
    fields_initialized = 0;
    pthread_mutex_unlock(&mu);
    return 0;
}

/* DcgmFieldGetById returns NULL before DcgmFieldsInit (dcgmInit calls it,
 * DcgmApi.cpp), for ids at or past DCGM_FI_MAX_FIELDS, and for ids DCGM has
 * no row for (dcgmFieldMeta[fieldId] is NULL there), as dcgm_fields.cpp
 * does. The fake knows only the rows of facts[]: another id is "unknown",
 * which go-dcgm's FieldGetByID reports as not recognized. */
API dcgm_field_meta_p DcgmFieldGetById(unsigned short fieldId)
{
    pthread_mutex_lock(&mu);
    count_call("DcgmFieldGetById");
    const dcgm_field_meta_t *m = fields_initialized ? field_meta(fieldId) : NULL;
    write_calls();
    pthread_mutex_unlock(&mu);
    return m;
}
