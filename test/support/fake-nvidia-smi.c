/*
 * The fake nvidia-smi of test/support/fake-nvidia-smi.js as a small static C program: the same trace,
 * the same switches ($FAKE_SMI_TRACE, $FAKE_SMI_STEP_FILE, $FAKE_SMI_START_MS and $FAKE_SMI_STEP_MS),
 * the same output byte for byte (test/support/fake-nvidia-smi-parity.test.ts runs both). A Node.js
 * process per query (about 40 MiB, 50-100 ms of CPU to start) is what a busy test node spends most
 * on when the backstop polls every 200 ms; the real nvidia-smi is a C program too.
 * Built by the tests with the system's cc (test/support/fake-mps-control.ts).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

/* A JSON value: just enough of JSON for the trace (objects, arrays, strings, numbers, true, false, null). */
enum kind { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
struct json {
  enum kind kind;
  double num;
  char *str;
  int len; /* items of an array or object */
  struct json *items;
  char **keys;
};

static const char *at;

static void fail_parse(void) {
  fprintf(stderr, "fake nvidia-smi: the trace is no JSON (at \"%.20s\")\n", at);
  exit(1);
}

static void skip_ws(void) {
  while (isspace((unsigned char)*at)) at++;
}

static struct json parse(void);

static char *parse_string(void) {
  if (*at != '"') fail_parse();
  at++;
  char *out = malloc(strlen(at) + 1), *o = out;
  while (*at && *at != '"') {
    if (*at != '\\') {
      *o++ = *at++;
      continue;
    }
    at++;
    switch (*at) {
    case 'n': *o++ = '\n'; break;
    case 't': *o++ = '\t'; break;
    case 'r': *o++ = '\r'; break;
    case 'b': *o++ = '\b'; break;
    case 'f': *o++ = '\f'; break;
    case 'u': {
      unsigned c = (unsigned)strtoul((char[]){at[1], at[2], at[3], at[4], 0}, NULL, 16);
      /* UTF-8 of a code point of the Basic Multilingual Plane (names and UUIDs are ASCII). */
      if (c < 0x80) *o++ = (char)c;
      else if (c < 0x800) *o++ = (char)(0xc0 | c >> 6), *o++ = (char)(0x80 | (c & 0x3f));
      else *o++ = (char)(0xe0 | c >> 12), *o++ = (char)(0x80 | ((c >> 6) & 0x3f)), *o++ = (char)(0x80 | (c & 0x3f));
      at += 4;
      break;
    }
    default: *o++ = *at;
    }
    at++;
  }
  if (*at != '"') fail_parse();
  at++;
  *o = 0;
  return out;
}

static struct json parse(void) {
  struct json v = {0};
  skip_ws();
  if (*at == '{' || *at == '[') {
    int obj = *at++ == '{';
    v.kind = obj ? J_OBJ : J_ARR;
    int cap = 8;
    v.items = malloc(cap * sizeof *v.items);
    v.keys = obj ? malloc(cap * sizeof *v.keys) : NULL;
    skip_ws();
    if (*at == (obj ? '}' : ']')) {
      at++;
      return v;
    }
    for (;;) {
      if (v.len == cap) {
        cap *= 2;
        v.items = realloc(v.items, cap * sizeof *v.items);
        if (obj) v.keys = realloc(v.keys, cap * sizeof *v.keys);
      }
      if (obj) {
        skip_ws();
        v.keys[v.len] = parse_string();
        skip_ws();
        if (*at++ != ':') fail_parse();
      }
      v.items[v.len++] = parse();
      skip_ws();
      if (*at == ',') {
        at++;
        continue;
      }
      if (*at++ != (obj ? '}' : ']')) fail_parse();
      return v;
    }
  }
  if (*at == '"') {
    v.kind = J_STR;
    v.str = parse_string();
  } else if (!strncmp(at, "true", 4) || !strncmp(at, "false", 5)) {
    v.kind = J_BOOL;
    v.num = *at == 't';
    at += *at == 't' ? 4 : 5;
  } else if (!strncmp(at, "null", 4)) {
    at += 4;
  } else {
    char *end;
    v.kind = J_NUM;
    v.num = strtod(at, &end);
    if (end == at) fail_parse();
    at = end;
  }
  return v;
}

/* A member of an object, or NULL (JavaScript's undefined). */
static const struct json *get(const struct json *o, const char *key) {
  if (!o || o->kind != J_OBJ) return NULL;
  for (int i = 0; i < o->len; i++)
    if (!strcmp(o->keys[i], key)) return &o->items[i];
  return NULL;
}

/* A value as JavaScript's String() writes it, for the values a trace holds. */
static const char *js(const struct json *v) {
  static char buf[8][64];
  static int n;
  char *b = buf[n++ % 8];
  if (!v) return "undefined";
  switch (v->kind) {
  case J_STR: return v->str;
  case J_NULL: return "null";
  case J_BOOL: return v->num ? "true" : "false";
  case J_NUM:
    if (v->num == floor(v->num) && fabs(v->num) < 1e21) snprintf(b, 64, "%.0f", v->num);
    else {
      /* The shortest form that reads back the same, as JavaScript prints a fraction. */
      for (int p = 1; p <= 17; p++) {
        snprintf(b, 64, "%.*g", p, v->num);
        if (strtod(b, NULL) == v->num) break;
      }
    }
    return b;
  default: return "[object Object]";
  }
}

static int truthy(const struct json *v) {
  return v && (v->kind == J_OBJ || v->kind == J_ARR || (v->kind == J_STR && *v->str) || ((v->kind == J_NUM || v->kind == J_BOOL) && v->num != 0 && !isnan(v->num)));
}

static char *read_file(const char *path) {
  FILE *f = path ? fopen(path, "r") : NULL;
  if (!f) {
    fprintf(stderr, "fake nvidia-smi: cannot read %s\n", path ? path : "$FAKE_SMI_TRACE (unset)");
    exit(1);
  }
  size_t cap = 1 << 16, len = 0;
  char *s = malloc(cap);
  for (size_t r; (r = fread(s + len, 1, cap - len - 1, f)) > 0;)
    if ((len += r) == cap - 1) s = realloc(s, cap *= 2);
  s[len] = 0;
  fclose(f);
  return s;
}

int main(int argc, char **argv) {
  at = read_file(getenv("FAKE_SMI_TRACE"));
  struct json trace = parse();
  const struct json *gpus = get(&trace, "gpus"), *steps = get(&trace, "steps");
  double index;
  const char *step_file = getenv("FAKE_SMI_STEP_FILE");
  if (step_file && *step_file) {
    char *text = read_file(step_file);
    char *end;
    index = strtod(text, &end);
    while (isspace((unsigned char)*end)) end++;
    if (*end) index = NAN; /* Number("x") */
  } else {
    struct timeval now;
    gettimeofday(&now, NULL);
    double ms = (double)now.tv_sec * 1000 + now.tv_usec / 1000;
    const char *start = getenv("FAKE_SMI_START_MS"), *every = getenv("FAKE_SMI_STEP_MS");
    index = floor((ms - (start ? atof(start) : NAN)) / (every ? atof(every) : NAN));
  }
  if (isnan(index) || !steps || steps->len == 0) {
    fprintf(stderr, "fake nvidia-smi: no step %s of the trace\n", isnan(index) ? "NaN" : "0");
    return 1;
  }
  int i = index < 0 ? 0 : index > steps->len - 1 ? steps->len - 1 : (int)index;
  const struct json *step = &steps->items[i], *apps = get(step, "apps");
  if (truthy(get(step, "fail"))) {
    fputs("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n\n", stdout);
    return 9;
  }
  const char *a0 = argc > 1 ? argv[1] : "";
  int n_apps = apps && apps->kind == J_ARR ? apps->len : 0;
  if (!strcmp(a0, "--query-gpu=index,uuid,name")) {
    for (int g = 0; g < gpus->len; g++)
      printf("%s, %s, %s\n", js(get(&gpus->items[g], "index")), js(get(&gpus->items[g], "uuid")), js(get(&gpus->items[g], "name")));
  } else if (!strcmp(a0, "--query-gpu=uuid,compute_mode")) {
    for (int g = 0; g < gpus->len; g++) {
      const struct json *mode = get(&gpus->items[g], "computeMode");
      printf("%s, %s\n", js(get(&gpus->items[g], "uuid")), mode && mode->kind != J_NULL ? js(mode) : "Default");
    }
  } else if (!strcmp(a0, "--query-compute-apps=pid,used_memory,gpu_uuid")) {
    if (n_apps == 0) puts("No running processes found");
    for (int a = 0; a < n_apps; a++) {
      const struct json *app = &apps->items[a], *uuid = NULL;
      for (int g = 0; g < gpus->len && !uuid; g++)
        if (get(&gpus->items[g], "index")->num == get(app, "gpu")->num) uuid = get(&gpus->items[g], "uuid");
      if (!uuid) {
        fprintf(stderr, "fake nvidia-smi: no GPU of index %s in the trace\n", js(get(app, "gpu")));
        return 1;
      }
      printf("%s, %s, %s\n", js(get(app, "pid")), js(get(app, "mib")), js(uuid));
    }
  } else if (!strcmp(a0, "pmon")) {
    puts("# gpu         pid   type     sm    mem    enc    dec    jpg    ofa    command");
    puts("# Idx           #    C/G      %      %      %      %      %      %    name");
    for (int g = 0; g < gpus->len; g++) {
      const struct json *gi = get(&gpus->items[g], "index");
      int shown = 0;
      for (int a = 0; a < n_apps; a++) {
        const struct json *app = &apps->items[a], *mps = get(app, "mps"), *sm = get(app, "sm");
        if (get(app, "gpu")->num != gi->num) continue;
        shown = 1;
        int client = mps && mps->kind == J_STR && !strcmp(mps->str, "client");
        int server = mps && mps->kind == J_STR && !strcmp(mps->str, "server");
        char smcol[64];
        if (client || !sm || sm->kind == J_NULL) strcpy(smcol, "     -");
        else snprintf(smcol, sizeof smcol, "%5s", js(sm));
        printf("    %s    %7s   %s  %s      %s      -      -      -      -    %s\n", js(gi), js(get(app, "pid")), client ? "M+C" : "  C", smcol,
               client ? "-" : "3", server ? "nvidia-cuda-mps" : "python3");
      }
      if (!shown) printf("    %s          -     -      -      -      -      -      -      -    -\n", js(gi));
    }
  } else {
    /* `unsupported arguments ${args.join(' ')}`: a space after `arguments` even with none. */
    fputs("fake nvidia-smi: unsupported arguments ", stderr);
    for (int a = 1; a < argc; a++) fprintf(stderr, "%s%s", a == 1 ? "" : " ", argv[a]);
    fputs("\n", stderr);
    return 2;
  }
  return 0;
}
