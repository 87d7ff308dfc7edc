/*
 * A fake `nvidia-cuda-mps-control` that behaves like the real one (driver 580, as measured in
 * ../shared/gpu/h100-driver-580/README.md and ../shared/gpu/h200-driver-580/README.md, logs t4e-t4g)
 * for every command the node agent uses. A small C program, as the real one is, so that a daemon per
 * share costs on a test node about what it costs on a GPU node.
 *
 *   -f / -d [-M]       run the control daemon (foreground / background): it listens on
 *                      $CUDA_MPS_PIPE_DIRECTORY/control, writes its pid to nvidia-cuda-mps-control.pid
 *                      there and logs to $CUDA_MPS_LOG_DIRECTORY/control.log. A `control` file already
 *                      there stops it, as a stale socket stops the real one. `-M` (multi-user): one
 *                      server owned by the daemon's user serves clients of every uid at once; only root
 *                      may start it.
 *   (no argument)      the front end: each stdin line is a command sent to the daemon, each answer
 *                      printed (a refusal too, with exit status 0, as the real one); with no daemon it
 *                      fails as the real one does.
 *   client <uid>       an MPS client: prints `ready <server> <pct> <dev>=<limit>,...` (the settings its
 *                      server had when it joined) and stays connected until terminated.
 *
 * Who asks: the real daemon reads the caller's uid from its socket; the fake takes the front end's
 * uid, or $FAKE_MPS_UID (a test standing for a tenant, e.g. host uid 100000 in a user namespace).
 * Settings (`set_*`) may be changed only by root or the daemon's user, and a server's own settings
 * also by the uid the server runs as: without `-M` a server runs as its first client's uid, so that
 * tenant may raise its own server's limits (measured); with `-M` servers are the daemon's (root's).
 * A server takes the daemon's defaults when it starts: later defaults reach only later servers, and
 * a server's own settings reach its later clients. Without `-M` one server per Linux user: a client
 * of another uid waits until the current server has no clients.
 * $FAKE_MPS_HANG=1 makes a started daemon stop answering (a wedged daemon); $FAKE_MPS_NO_SERVER=1
 * makes `start_server` start nothing (a GPU where a server cannot come up).
 *
 * Wire format between the fake's own processes: a connection's first line is `uid <n>` (the caller),
 * then one command a line; each answer ends with "\n\0". Built by the tests with the system's cc
 * (test/support/fake-mps-control.ts): cc -O2 -static -o fake-mps-control fake-mps-control.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 1024
#define MAX_SERVERS 64
#define MAX_CLIENTS 256
#define MAX_DEVS 32
#define MAX_WORDS 8
#define LINE_MAX_LEN 4096

/** The control socket: no longer than a socket address holds. */
static char control_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static char pid_path[LINE_MAX_LEN], log_path[LINE_MAX_LEN];

static long caller_uid(void) {
  const char *v = getenv("FAKE_MPS_UID");
  return v ? atol(v) : (long)getuid();
}

static void paths(void) {
  const char *pipe_dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
  const char *log_dir = getenv("CUDA_MPS_LOG_DIRECTORY");
  if (!pipe_dir) pipe_dir = "/tmp/nvidia-mps";
  if (!log_dir) log_dir = "/var/log/nvidia-mps";
  snprintf(control_path, sizeof control_path, "%s/control", pipe_dir);
  snprintf(pid_path, sizeof pid_path, "%s/nvidia-cuda-mps-control.pid", pipe_dir);
  snprintf(log_path, sizeof log_path, "%s/control.log", log_dir);
}

/** Writes all of `len` bytes (a socket or stdout); false when the other end is gone. */
static int write_all(int fd, const char *s, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, s, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0;
    s += n;
    len -= (size_t)n;
  }
  return 1;
}

static int connect_control(void) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  memcpy(addr.sun_path, control_path, sizeof addr.sun_path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

/* ---- the daemon ---- */

/** A setting per device: `<dev>` -> `<limit>`, in the order first set. */
struct mem_limits {
  int n;
  char dev[MAX_DEVS][32], value[MAX_DEVS][32];
};

struct client {
  long pid;
  int fd;
};

struct server {
  long pid, uid;
  double pct;
  struct mem_limits mem;
  int nclients;
  struct client clients[MAX_CLIENTS];
};

struct pending {
  long pid, uid;
  int fd;
};

/** A connection: the first line names the caller; `hang` ones are never read. */
struct conn {
  int fd;
  long uid; /* -1 until the `uid` line */
  int hang;
  long client_pid; /* > 0 once it sent `client` */
  size_t len;
  char buf[LINE_MAX_LEN];
};

static long owner;
static int multi_user;
static double default_pct = 100;
static struct mem_limits default_mem;
/** Servers in the order they started: the first is the current one. */
static struct server servers[MAX_SERVERS];
static int nservers;
static long next_server;
static struct pending pending[MAX_CLIENTS];
static int npending;
static struct conn *conns[MAX_CONNS];
static int nconns;
static int listener = -1;

static void log_line(const char *fmt, ...) {
  int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return; /* no log dir */
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  char line[LINE_MAX_LEN], stamp[32];
  strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  int n = snprintf(line, sizeof line, "[%s.%03ldZ Control %d] ", stamp, (long)tv.tv_usec / 1000, (int)getpid());
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
  line[n++] = '\n';
  write_all(fd, line, (size_t)n);
  close(fd);
}

static const char *mem_get(const struct mem_limits *m, const char *dev) {
  for (int i = 0; i < m->n; i++)
    if (strcmp(m->dev[i], dev) == 0) return m->value[i];
  return NULL;
}

static void mem_set(struct mem_limits *m, const char *dev, const char *value) {
  int i = 0;
  while (i < m->n && strcmp(m->dev[i], dev) != 0) i++;
  if (i == m->n) {
    if (m->n == MAX_DEVS) return;
    m->n++;
    snprintf(m->dev[i], sizeof m->dev[i], "%s", dev);
  }
  snprintf(m->value[i], sizeof m->value[i], "%s", value);
}

/** A number the way the JS fake's Number() read it: the whole word, else none (-1). */
static long number(const char *word) {
  if (!word || !*word) return -1;
  char *end;
  long v = strtol(word, &end, 10);
  return *end ? -1 : v;
}

/** A percentage the way Number() reads one: NaN for a missing word or one that is not a number. */
static double percentage(const char *word) {
  if (!word || !*word) return NAN;
  char *end;
  double v = strtod(word, &end);
  return *end ? NAN : v;
}

static struct server *server_of(const char *word) {
  long pid = number(word);
  for (int i = 0; i < nservers; i++)
    if (servers[i].pid == pid) return &servers[i];
  return NULL;
}

static struct server *start_server(long uid) {
  if (nservers == MAX_SERVERS) return NULL;
  struct server *s = &servers[nservers++];
  memset(s, 0, sizeof *s);
  s->pid = next_server++;
  s->uid = multi_user ? owner : uid;
  s->pct = default_pct;
  s->mem = default_mem;
  log_line("Starting new server %ld for user %ld", s->pid, s->uid);
  return s;
}

static void remove_server(int i) {
  memmove(&servers[i], &servers[i + 1], sizeof servers[0] * (size_t)(nservers - i - 1));
  nservers--;
}

static void remove_client(struct server *s, int i) {
  memmove(&s->clients[i], &s->clients[i + 1], sizeof s->clients[0] * (size_t)(s->nclients - i - 1));
  s->nclients--;
}

/** `%.1f`, as JS's toFixed(1) prints a percentage (NaN for one that was not a number). */
static void pct_text(char *out, size_t size, double pct) {
  if (isnan(pct)) snprintf(out, size, "NaN");
  else snprintf(out, size, "%.1f", pct);
}

/** Serves waiting clients in order while the current server (or a new one) may take them. */
static void admit(void) {
  while (npending > 0) {
    struct pending next = pending[0];
    struct server *s = nservers > 0 ? &servers[0] : NULL;
    if (s && !multi_user && s->uid != next.uid) {
      if (s->nclients > 0) return;
      log_line("Server %ld exited with status 0", s->pid);
      remove_server(0);
      s = NULL;
    }
    if (!s && !(s = start_server(next.uid))) return;
    memmove(&pending[0], &pending[1], sizeof pending[0] * (size_t)(--npending));
    if (s->nclients < MAX_CLIENTS) s->clients[s->nclients++] = (struct client){next.pid, next.fd};
    char line[LINE_MAX_LEN], pct[32];
    // The client prints the percentage as JS's String() does: no `.0` on a whole number.
    if (s->pct == floor(s->pct)) snprintf(pct, sizeof pct, "%.0f", s->pct);
    else snprintf(pct, sizeof pct, "%g", s->pct);
    int n = snprintf(line, sizeof line, "ready %ld %s ", s->pid, pct);
    for (int i = 0; i < s->mem.n && n < (int)sizeof line; i++)
      n += snprintf(line + n, sizeof line - (size_t)n, "%s%s=%s", i ? "," : "", s->mem.dev[i], s->mem.value[i]);
    if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
    line[n++] = '\n';
    write_all(next.fd, line, (size_t)n);
  }
}

/** Ends a client's connection as the daemon's terminate does: a last line, then the write side closed. */
static void end_client(int fd) {
  write_all(fd, "terminated\n", 11);
  shutdown(fd, SHUT_WR);
}

static void stop(int sig) {
  (void)sig;
  unlink(control_path);
  _exit(0);
}

static const char *refusal(long uid, char *out, size_t size) {
  snprintf(out, size,
           "Insufficient privileges for UID %ld. Control deamon settings can only be modified by the user who started it or by "
           "the root user.",
           uid);
  return out;
}

/**
 * The answer to one command line from `c`, into `out`; NULL for a command that gets none now (a client
 * joining). `quit` exits after answering.
 */
static const char *answer(char *cmd, struct conn *c, char *out, size_t size, int *quit) {
  char *w[MAX_WORDS] = {0};
  int nw = 0;
  for (char *save, *t = strtok_r(cmd, " \t\r", &save); t && nw < MAX_WORDS; t = strtok_r(NULL, " \t\r", &save)) w[nw++] = t;
  const char *op = w[0] ? w[0] : "";
  const char *r0 = w[1], *r1 = w[2], *r2 = w[3];
  long uid = c->uid;
  int privileged = uid == 0 || uid == owner;
  struct server *server = server_of(r0);
  out[0] = '\0';
  if (strncmp(op, "set_", 4) == 0) {
    // The server's own settings also yield to the uid it runs as; the defaults only to root and the owner.
    int allowed = privileged || (strncmp(op, "set_default_", 12) != 0 && server && server->uid == uid);
    if (!allowed) return refusal(uid, out, size);
  }
#define NOT_FOUND() (snprintf(out, size, "Server %s not found", r0 ? r0 : "undefined"), out)
  if (strcmp(op, "set_default_active_thread_percentage") == 0 || strcmp(op, "get_default_active_thread_percentage") == 0) {
    if (op[0] == 's') default_pct = percentage(r0);
    pct_text(out, size, default_pct);
  } else if (strcmp(op, "set_default_device_pinned_mem_limit") == 0) {
    mem_set(&default_mem, r0 ? r0 : "undefined", r1 ? r1 : "undefined");
  } else if (strcmp(op, "get_default_device_pinned_mem_limit") == 0) {
    const char *v = mem_get(&default_mem, r0 ? r0 : "undefined");
    snprintf(out, size, "%s", v ? v : "0M");
  } else if (strcmp(op, "set_active_thread_percentage") == 0 || strcmp(op, "get_active_thread_percentage") == 0) {
    if (!server) return NOT_FOUND();
    if (op[0] == 's') server->pct = percentage(r1);
    pct_text(out, size, server->pct);
  } else if (strcmp(op, "set_device_pinned_mem_limit") == 0) {
    if (!server) return NOT_FOUND();
    mem_set(&server->mem, r1 ? r1 : "undefined", r2 ? r2 : "undefined");
  } else if (strcmp(op, "get_device_pinned_mem_limit") == 0) {
    if (!server) return NOT_FOUND();
    const char *v = mem_get(&server->mem, r1 ? r1 : "undefined");
    snprintf(out, size, "%s", v ? v : "0M");
  } else if (strcmp(op, "get_server_list") == 0) {
    for (int i = 0, n = 0; i < nservers; i++) n += snprintf(out + n, size - (size_t)n, "%s%ld", i ? "\n" : "", servers[i].pid);
  } else if (strcmp(op, "get_client_list") == 0) {
    for (int i = 0, n = 0; server && i < server->nclients; i++)
      n += snprintf(out + n, size - (size_t)n, "%s%ld", i ? "\n" : "", server->clients[i].pid);
  } else if (strcmp(op, "terminate_client") == 0) {
    long pid = number(r1);
    int i = 0;
    while (server && i < server->nclients && server->clients[i].pid != pid) i++;
    if (!server || i == server->nclients) return snprintf(out, size, "Client not found"), out;
    end_client(server->clients[i].fd);
    remove_client(server, i);
    admit();
    snprintf(out, size, "0");
  } else if (strcmp(op, "start_server") == 0) {
    const char *no = getenv("FAKE_MPS_NO_SERVER");
    if (!(no && strcmp(no, "1") == 0) && (nservers == 0 || multi_user)) start_server(r1 ? number(r1) : 0);
  } else if (strcmp(op, "client") == 0) {
    long pid = number(r0), cuid = number(r1);
    int busy = nservers > 0 && !multi_user && servers[0].uid != cuid;
    log_line("NEW CLIENT %ld from user %ld: %s", pid, cuid,
             busy ? "Server is not ready, push client to pending list" : "Server already exists");
    if (npending < MAX_CLIENTS) pending[npending++] = (struct pending){pid, cuid, c->fd};
    c->client_pid = pid;
    admit();
    return NULL;
  } else if (strcmp(op, "quit") == 0) {
    log_line("Cmd:quit");
    for (int i = 0; i < nservers; i++)
      for (int j = 0; j < servers[i].nclients; j++) end_client(servers[i].clients[j].fd);
    close(listener);
    unlink(control_path);
    unlink(pid_path);
    *quit = 1;
  } else {
    snprintf(out, size, "Unrecognized command %s", op);
  }
#undef NOT_FOUND
  return out;
}

/** A connection that closed: a client leaves its server (or the queue), and the next waiting one may be served. */
static void drop(int k) {
  struct conn *c = conns[k];
  if (c->client_pid > 0) {
    for (int i = 0; i < nservers; i++)
      for (int j = servers[i].nclients - 1; j >= 0; j--)
        if (servers[i].clients[j].fd == c->fd) remove_client(&servers[i], j);
    for (int i = npending - 1; i >= 0; i--)
      if (pending[i].fd == c->fd) memmove(&pending[i], &pending[i + 1], sizeof pending[0] * (size_t)(--npending - i));
  }
  close(c->fd);
  free(c);
  conns[k] = conns[--nconns];
  admit();
}

/** Reads what `c` sent and answers each whole line; false when it closed. */
static int serve(struct conn *c) {
  ssize_t n = read(c->fd, c->buf + c->len, sizeof c->buf - c->len - 1);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 1;
  if (n <= 0) return 0;
  c->len += (size_t)n;
  char *nl;
  while ((nl = memchr(c->buf, '\n', c->len))) {
    *nl = '\0';
    size_t used = (size_t)(nl - c->buf) + 1;
    if (c->uid < 0) {
      // The first line names the caller: what the real daemon reads from the socket's credentials.
      c->uid = atol(strncmp(c->buf, "uid ", 4) == 0 ? c->buf + 4 : c->buf);
    } else {
      static char out[65536];
      int quit = 0;
      const char *a = answer(c->buf, c, out, sizeof out, &quit);
      if (a) {
        size_t len = strlen(a);
        memcpy(out + len, "\n", 2); /* "\n\0": the answer's end */
        write_all(c->fd, out, len + 2);
      }
      if (quit) _exit(0);
    }
    memmove(c->buf, c->buf + used, c->len - used);
    c->len -= used;
  }
  if (c->len == sizeof c->buf - 1) return 0; /* a line longer than any command */
  return 1;
}

static void daemon_loop(void) {
  owner = caller_uid();
  if (access(control_path, F_OK) == 0) {
    fputs("An instance of this daemon is already running\n", stderr);
    exit(1);
  }
  signal(SIGPIPE, SIG_IGN);
  signal(SIGTERM, stop);
  signal(SIGINT, stop);
  next_server = 1000 + (getpid() % 1000) * 10;
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  memcpy(addr.sun_path, control_path, sizeof addr.sun_path);
  listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(listener, 128) != 0) {
    fprintf(stderr, "cannot listen on %s: %s\n", control_path, strerror(errno));
    exit(1);
  }
  chmod(control_path, 0777); // any uid reaches it (the folder's mode decides); settings check the uid
  FILE *pf = fopen(pid_path, "w");
  if (pf) {
    fprintf(pf, "%d\n", (int)getpid());
    fclose(pf);
  }
  log_line("Starting control daemon%s", multi_user ? " (multi-user server)" : "");
  const char *hang_env = getenv("FAKE_MPS_HANG");
  int hang = hang_env && strcmp(hang_env, "1") == 0;
  static struct pollfd fds[MAX_CONNS + 1];
  for (;;) {
    fds[0] = (struct pollfd){.fd = listener, .events = POLLIN};
    for (int k = 0; k < nconns; k++) fds[k + 1] = (struct pollfd){.fd = conns[k]->fd, .events = conns[k]->hang ? 0 : POLLIN};
    int count = nconns;
    if (poll(fds, (nfds_t)count + 1, -1) < 0) {
      if (errno == EINTR) continue;
      exit(1);
    }
    // Connections first, by fd (their indexes move as they close), then the new ones.
    for (int k = count; k >= 1; k--) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      int at = -1;
      for (int j = 0; j < nconns; j++)
        if (conns[j]->fd == fds[k].fd) at = j;
      if (at < 0) continue;
      if (conns[at]->hang ? (fds[k].revents & (POLLHUP | POLLERR)) != 0 : !serve(conns[at])) drop(at);
    }
    if (fds[0].revents & POLLIN) {
      int fd = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
      if (fd < 0) continue;
      if (nconns == MAX_CONNS) {
        close(fd);
        continue;
      }
      struct conn *c = calloc(1, sizeof *c);
      c->fd = fd;
      c->uid = -1;
      c->hang = hang; // accepts, never answers
      conns[nconns++] = c;
    }
  }
}

/* ---- the front end and the client ---- */

static void front_end(void) {
  // All of stdin first, as the real front end takes a script.
  size_t cap = 1 << 16, len = 0;
  char *in = malloc(cap);
  for (ssize_t n; (n = read(0, in + len, cap - len - 1)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    len += (size_t)n;
    if (len == cap - 1) in = realloc(in, cap *= 2);
  }
  in[len] = '\0';
  int fd = connect_control();
  if (fd < 0) {
    fputs("Cannot find MPS control daemon process\n", stderr);
    exit(1);
  }
  signal(SIGPIPE, SIG_IGN);
  char hello[64];
  int hn = snprintf(hello, sizeof hello, "uid %ld\n", caller_uid());
  if (!write_all(fd, hello, (size_t)hn)) exit(0);
  static char ans[1 << 20];
  size_t alen = 0;
  for (char *save, *line = strtok_r(in, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    int blank = 1;
    for (char *p = line; *p; p++)
      if (*p != ' ' && *p != '\t' && *p != '\r') blank = 0;
    if (blank) continue;
    if (!write_all(fd, line, strlen(line)) || !write_all(fd, "\n", 1)) exit(0);
    // One command at a time: its answer ends with "\0".
    char *end;
    while (!(end = memchr(ans, '\0', alen))) {
      ssize_t n = read(fd, ans + alen, sizeof ans - alen);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) exit(0); /* the daemon closed: it quit */
      alen += (size_t)n;
    }
    size_t used = (size_t)(end - ans) + 1, out = used - 1;
    if (out > 0 && ans[out - 1] == '\n') out--;
    if (out > 0) {
      write_all(1, ans, out);
      write_all(1, "\n", 1);
    }
    memmove(ans, ans + used, alen - used);
    alen -= used;
  }
  shutdown(fd, SHUT_WR);
  char sink[256];
  while (read(fd, sink, sizeof sink) > 0) {
  }
  exit(0);
}

/** A client process: connects as `uid`, prints `ready <server> <pct> <mem>` once served, stays until terminated. */
static void client(long uid) {
  int fd = connect_control();
  if (fd < 0) {
    fprintf(stderr, "mps client: connect %s %s\n", strerrorname_np(errno) ? strerrorname_np(errno) : strerror(errno), control_path);
    exit(1);
  }
  char hello[128];
  int n = snprintf(hello, sizeof hello, "uid %ld\nclient %d %ld\n", uid, (int)getpid(), uid);
  write_all(fd, hello, (size_t)n);
  char buf[4096];
  for (ssize_t r; (r = read(fd, buf, sizeof buf)) != 0;) {
    if (r < 0) {
      if (errno == EINTR) continue;
      break;
    }
    write_all(1, buf, (size_t)r);
  }
  exit(0);
}

int main(int argc, char **argv) {
  paths();
  int fg = 0, bg = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-M") == 0) multi_user = 1;
    if (strcmp(argv[i], "-f") == 0) fg = 1;
    if (strcmp(argv[i], "-d") == 0) bg = 1;
  }
  if (multi_user && caller_uid() != 0 && (fg || bg)) {
    fputs("Only root user may enable -multiuser-server!\n", stderr);
    return 1;
  }
  if (fg) daemon_loop();
  else if (bg) {
    // In the background: a session of its own, without the caller's stdio.
    pid_t pid = fork();
    if (pid != 0) return pid < 0 ? 1 : 0;
    setsid();
    int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; fd++) dup2(null, fd);
    if (null > 2) close(null);
    daemon_loop();
  } else if (argc > 1 && strcmp(argv[1], "client") == 0)
    client(argc > 2 ? atol(argv[2]) : (long)getuid());
  else
    front_end();
  return 0;
}
