// Realm's UCX bootstrap over TCP, so that diffuse processes find each other without MPI.
//
// Realm loads this library when REALM_UCP_BOOTSTRAP_MODE=plugin and
// REALM_UCP_BOOTSTRAP_PLUGIN names it, and calls realm_ucp_bootstrap_plugin_init (interface:
// the wheel's share/legate/realm_ucp_bootstrap/bootstrap.h). Each process reads its place from
// the environment the diffuse backend prepares:
//   DIFFUSE_RANK, DIFFUSE_RANKS       this process's rank and the number of processes
//   DIFFUSE_COORDINATOR               host:port where rank 0 listens and the others connect
//   DIFFUSE_BOOTSTRAP_TIMEOUT         seconds any step may wait for a peer (default 60)
//   DIFFUSE_RANK_TIMEOUT              seconds a rank may stay silent while the run goes on
//                                     (default 60; fractions allowed)
// Ranks form a star around rank 0. Every collective is one exchange: each rank sends its
// contribution to rank 0, which returns everybody's contributions in rank order; each
// collective then takes what it needs. Realm uses the bootstrap only while starting and
// stopping, so simplicity wins over bandwidth. Every wait is bounded: a peer that never comes
// or goes away fails the collective with a message naming it, never a hang.
//
// Besides its collective connection, every rank opens a heartbeat connection to rank 0, and
// both stay open for the whole run, owned by a watchdog thread on each side (rank 0: one per
// rank; the others: rank 0's). The watchdogs send each other a heartbeat byte several times
// per DIFFUSE_RANK_TIMEOUT and read the other side's. A rank whose connection closes without
// the goodbye `finalize` sends first has died; a rank that sends nothing for
// DIFFUSE_RANK_TIMEOUT is stopped (SIGSTOP) or hung (a frozen node, a lost network): either
// way this process exits with a message naming it. Without this the survivors would wait on
// it forever, their Realm threads spinning. Rank 0 first tells the others which rank it gave
// up on, so that every rank's message names the same culprit.

#define _GNU_SOURCE  // POLLRDHUP
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap.h"

// Sent by every rank when it connects: guards against strangers on the port, and says which
// of its two connections this is.
#define HELLO_MAGIC 0x64696675u
#define HEARTBEAT_MAGIC 0x64696668u
// What the watchdogs send each other over the heartbeat connections: one byte each, but for
// LOST, which is followed by the lost rank's number (4 bytes).
#define BEAT 'h'
#define GOODBYE 'g'
#define LOST 'l'
#define HOST_BYTES 256

struct bootstrap_state {
  int rank;
  int size;
  // Rank 0: the connection to each rank (index 0 unused). Other ranks: peer[0] is rank 0.
  int* peer;
  // The heartbeat connections, indexed as `peer`.
  int* beat;
  int timeout_ms;
  // How long a rank may stay silent, and how often heartbeats are sent (ms).
  int silence_ms;
  int beat_ms;
  // The watchdog thread, and whether it should stop (finalize has begun).
  pthread_t watchdog;
  int watching;
  atomic_int finishing;
};

static struct bootstrap_state state;

static void complain(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fprintf(stderr, "diffuse bootstrap (rank %d of %d): ", state.rank, state.size);
  vfprintf(stderr, fmt, args);
  fputc('\n', stderr);
  va_end(args);
}

static int64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

// Waits until `fd` is ready for `events` or the deadline passes (-1).
static int wait_ready(int fd, short events, int64_t deadline) {
  for (;;) {
    int64_t left = deadline - now_ms();
    if (left <= 0) return -1;
    struct pollfd p = {fd, events, 0};
    int r = poll(&p, 1, (int)left);
    if (r > 0) return 0;
    if (r < 0 && errno != EINTR) return -1;
  }
}

static int send_all(int fd, const void* buf, size_t n, int peer) {
  const char* p = buf;
  int64_t deadline = now_ms() + state.timeout_ms;
  while (n > 0) {
    if (wait_ready(fd, POLLOUT, deadline) != 0) {
      complain("sending to rank %d timed out after %d s", peer, state.timeout_ms / 1000);
      return -1;
    }
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      complain("sending to rank %d failed: %s (has it exited?)", peer, strerror(errno));
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int recv_all(int fd, void* buf, size_t n, int peer) {
  char* p = buf;
  int64_t deadline = now_ms() + state.timeout_ms;
  while (n > 0) {
    if (wait_ready(fd, POLLIN, deadline) != 0) {
      complain("rank %d sent nothing for %d s", peer, state.timeout_ms / 1000);
      return -1;
    }
    ssize_t r = recv(fd, p, n, 0);
    if (r == 0) {
      complain("rank %d closed its connection (has it exited?)", peer);
      return -1;
    }
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      complain("receiving from rank %d failed: %s", peer, strerror(errno));
      return -1;
    }
    p += r;
    n -= (size_t)r;
  }
  return 0;
}

// The collective every other one is made of: each rank contributes `len` bytes; on success
// `*all` (malloc'd, the caller frees it) holds every contribution in rank order and
// `offsets[r]` (size + 1 entries) where rank r's starts.
static int exchange(const void* mine, uint64_t len, char** all, uint64_t* offsets) {
  uint64_t* sizes = calloc((size_t)state.size, sizeof(uint64_t));
  char** parts = calloc((size_t)state.size, sizeof(char*));
  int failed = sizes == NULL || parts == NULL;
  if (!failed && state.rank == 0) {
    sizes[0] = len;
    for (int r = 1; r < state.size && !failed; r++) {
      failed = recv_all(state.peer[r], &sizes[r], sizeof(uint64_t), r) != 0;
      if (!failed && sizes[r] > 0) {
        parts[r] = malloc(sizes[r]);
        failed = parts[r] == NULL || recv_all(state.peer[r], parts[r], sizes[r], r) != 0;
      }
    }
  } else if (!failed) {
    failed = send_all(state.peer[0], &len, sizeof(uint64_t), 0) != 0 ||
             (len > 0 && send_all(state.peer[0], mine, len, 0) != 0) ||
             recv_all(state.peer[0], sizes, sizeof(uint64_t) * (size_t)state.size, 0) != 0;
  }
  uint64_t total = 0;
  if (!failed) {
    for (int r = 0; r < state.size; r++) {
      offsets[r] = total;
      total += sizes[r];
    }
    offsets[state.size] = total;
    *all = malloc(total > 0 ? total : 1);
    failed = *all == NULL;
  }
  if (!failed && state.rank == 0) {
    if (len > 0) memcpy(*all, mine, len);
    for (int r = 1; r < state.size; r++)
      if (sizes[r] > 0) memcpy(*all + offsets[r], parts[r], sizes[r]);
    for (int r = 1; r < state.size && !failed; r++)
      failed = send_all(state.peer[r], sizes, sizeof(uint64_t) * (size_t)state.size, r) != 0 ||
               (total > 0 && send_all(state.peer[r], *all, total, r) != 0);
  } else if (!failed && total > 0) {
    failed = recv_all(state.peer[0], *all, total, 0) != 0;
  }
  for (int r = 0; parts != NULL && r < state.size; r++) free(parts[r]);
  free(parts);
  free(sizes);
  if (failed && *all != NULL) {
    free(*all);
    *all = NULL;
  }
  return failed ? BOOTSTRAP_ERROR_INTERNAL : 0;
}

// Runs `exchange` with scratch space for the offsets, then `take(all, offsets)`.
#define EXCHANGE_THEN(mine, len, body)                                              \
  do {                                                                              \
    char* all = NULL;                                                               \
    uint64_t* offsets = calloc((size_t)state.size + 1, sizeof(uint64_t));           \
    if (offsets == NULL || exchange((mine), (len), &all, offsets) != 0) {           \
      free(offsets);                                                                \
      return BOOTSTRAP_ERROR_INTERNAL;                                              \
    }                                                                               \
    body;                                                                           \
    free(all);                                                                      \
    free(offsets);                                                                  \
    return 0;                                                                       \
  } while (0)

static int do_barrier(bootstrap_handle_t* h) {
  (void)h;
  EXCHANGE_THEN(NULL, 0, (void)all);
}

static int do_bcast(void* buf, int bytes, int root, bootstrap_handle_t* h) {
  (void)h;
  int mine = state.rank == root ? bytes : 0;
  EXCHANGE_THEN(buf, (uint64_t)mine, {
    if (state.rank != root) memcpy(buf, all + offsets[root], (size_t)bytes);
  });
}

static int do_gather(const void* send, void* recv, int bytes, int root, bootstrap_handle_t* h) {
  (void)h;
  EXCHANGE_THEN(send, (uint64_t)bytes, {
    if (state.rank == root) memcpy(recv, all, (size_t)bytes * (size_t)state.size);
  });
}

static int do_allgather(const void* send, void* recv, int bytes, bootstrap_handle_t* h) {
  (void)h;
  EXCHANGE_THEN(send, (uint64_t)bytes, memcpy(recv, all, (size_t)bytes * (size_t)state.size));
}

static int do_alltoall(const void* send, void* recv, int bytes, bootstrap_handle_t* h) {
  (void)h;
  uint64_t row = (uint64_t)bytes * (uint64_t)state.size;
  EXCHANGE_THEN(send, row, {
    for (int r = 0; r < state.size; r++)
      memcpy((char*)recv + (size_t)r * (size_t)bytes,
             all + offsets[r] + (size_t)state.rank * (size_t)bytes, (size_t)bytes);
  });
}

static int do_allreduce_ull(const void* send, void* recv, int count, enum reduction_op op,
                            bootstrap_handle_t* h) {
  (void)h;
  if (op != REDUCTION_SUM) {
    complain("reduction operator %d is not supported (only sums are)", (int)op);
    return BOOTSTRAP_ERROR_INTERNAL;
  }
  EXCHANGE_THEN(send, (uint64_t)count * sizeof(unsigned long long), {
    unsigned long long* out = recv;
    for (int i = 0; i < count; i++) {
      unsigned long long sum = 0;
      for (int r = 0; r < state.size; r++) {
        unsigned long long v;
        memcpy(&v, all + offsets[r] + (size_t)i * sizeof v, sizeof v);
        sum += v;
      }
      out[i] = sum;
    }
  });
}

static int do_allgatherv(const void* send, void* recv, int* sizes, int* displacements,
                         bootstrap_handle_t* h) {
  (void)h;
  EXCHANGE_THEN(send, (uint64_t)sizes[state.rank], {
    for (int r = 0; r < state.size; r++)
      memcpy((char*)recv + displacements[r], all + offsets[r], (size_t)sizes[r]);
  });
}

// Sends `byte` to every heartbeat connection without waiting (a full buffer means the peer
// is not reading: its silence is what the watchdog times).
static void send_beats(char byte) {
  for (int r = 0; r < state.size; r++)
    if (state.beat[r] >= 0) (void)send(state.beat[r], &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
}

// Ends the run from the watchdog: rank 0 first tells the other ranks whom it lost.
static void give_up(int lost) {
  if (state.rank == 0) {
    char message[5] = {LOST};
    int32_t who = lost;
    memcpy(message + 1, &who, sizeof who);
    for (int r = 1; r < state.size; r++)
      if (state.beat[r] >= 0 && r != lost)
        (void)send(state.beat[r], message, sizeof message, MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  _exit(1);
}

// Reads what rank `r` sent on its heartbeat connection; returns 0, or -1 once it said
// goodbye. Exits the process when it died or rank 0 gave up on another rank.
static int read_beats(int r, int64_t* heard) {
  char bytes[64];
  ssize_t n = recv(state.beat[r], bytes, sizeof bytes, MSG_DONTWAIT);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
    n = 0;
  }
  if (n == 0) {
    if (atomic_load(&state.finishing)) return -1;
    complain("rank %d closed its connection without finishing (it died, or stopped on a rank "
             "it lost); stopping",
             r);
    give_up(r);
  }
  for (ssize_t i = 0; i < n; i++) {
    if (bytes[i] == GOODBYE) return -1;
    if (bytes[i] == LOST) {
      int32_t lost = -1;
      if (i + 5 <= n) memcpy(&lost, bytes + i + 1, sizeof lost);
      complain("rank 0 stopped the run: rank %d died or went silent; stopping", (int)lost);
      _exit(1);
    }
  }
  *heard = now_ms();
  return 0;
}

// The watchdog: heartbeats out every beat_ms, and every rank it watches (rank 0: all; the
// others: rank 0) must be heard from within silence_ms or say goodbye.
static void* watch(void* unused) {
  (void)unused;
  int64_t* heard = calloc((size_t)state.size, sizeof(int64_t));
  struct pollfd* polls = calloc((size_t)state.size, sizeof(struct pollfd));
  int* ranks = calloc((size_t)state.size, sizeof(int));
  if (heard == NULL || polls == NULL || ranks == NULL) {
    complain("no memory for the watchdog: ranks that stop are not detected");
    free(heard), free(polls), free(ranks);
    return NULL;
  }
  int64_t start = now_ms(), next_beat = start, last = start;
  for (int r = 0; r < state.size; r++) heard[r] = start;
  while (!atomic_load(&state.finishing)) {
    int64_t now = now_ms();
    // This process itself was stopped (or starved) for a while: the others' silence over that
    // time says nothing about them, so they get a fresh window to be heard from.
    if (now - last > state.silence_ms / 2)
      for (int r = 0; r < state.size; r++) heard[r] = now;
    last = now;
    if (now >= next_beat) {
      send_beats(BEAT);
      next_beat = now + state.beat_ms;
    }
    int count = 0;
    for (int r = 0; r < state.size; r++) {
      if (state.beat[r] < 0) continue;
      if (now - heard[r] > state.silence_ms) {
        complain("rank %d sent nothing for %.1f s (DIFFUSE_RANK_TIMEOUT): it is stopped or "
                 "hung; stopping",
                 r, (double)(now - heard[r]) / 1000.0);
        give_up(r);
      }
      polls[count] = (struct pollfd){state.beat[r], POLLIN, 0};
      ranks[count++] = r;
    }
    int wait = (int)(next_beat - now);
    if (wait > 100) wait = 100;  // so that `finishing` is seen soon
    if (wait < 1) wait = 1;
    if (poll(polls, (nfds_t)count, wait) <= 0) continue;
    for (int i = 0; i < count && !atomic_load(&state.finishing); i++) {
      if (polls[i].revents == 0) continue;
      int r = ranks[i];
      if (read_beats(r, &heard[r]) != 0) {
        // Goodbye: this rank finished; its connection is not watched any more.
        close(state.beat[r]);
        state.beat[r] = -1;
      }
    }
  }
  free(heard), free(polls), free(ranks);
  return NULL;
}

static int do_finalize(bootstrap_handle_t* h) {
  atomic_store(&state.finishing, 1);
  if (state.watching) {
    pthread_join(state.watchdog, NULL);
    state.watching = 0;
  }
  if (state.beat != NULL) send_beats(GOODBYE);
  for (int r = 0; state.peer != NULL && r < state.size; r++) {
    if (state.peer[r] >= 0) close(state.peer[r]);
    if (state.beat[r] >= 0) close(state.beat[r]);
  }
  free(state.peer);
  free(state.beat);
  state.peer = NULL;
  state.beat = NULL;
  free(h->shared_ranks);
  h->shared_ranks = NULL;
  return 0;
}

// A number of seconds from the environment in ms, or `fallback` seconds when it is absent;
// a value that is not a positive number is reported and replaced by the fallback.
static int env_ms(const char* name, double fallback) {
  const char* v = getenv(name);
  if (v == NULL || *v == '\0') return (int)(fallback * 1000);
  char* end = NULL;
  double seconds = strtod(v, &end);
  if (*end != '\0' || !(seconds > 0) || seconds > 86400 * 365) {
    complain("%s=\"%s\" is not a positive number of seconds; using %g", name, v, fallback);
    return (int)(fallback * 1000);
  }
  return seconds * 1000 < 1 ? 1 : (int)(seconds * 1000);
}

// An integer environment variable, or -1 when it is absent or not a number.
static long env_long(const char* name) {
  const char* v = getenv(name);
  if (v == NULL || *v == '\0') return -1;
  char* end = NULL;
  long x = strtol(v, &end, 10);
  return *end == '\0' ? x : -1;
}

// Splits DIFFUSE_COORDINATOR ("host:port") into host and port.
static int coordinator(char* host, size_t host_len, char* port, size_t port_len) {
  const char* v = getenv("DIFFUSE_COORDINATOR");
  const char* colon = v == NULL ? NULL : strrchr(v, ':');
  if (colon == NULL || colon == v || colon[1] == '\0' ||
      (size_t)(colon - v) >= host_len || strlen(colon + 1) >= port_len) {
    complain("DIFFUSE_COORDINATOR must be host:port (where rank 0 listens), not \"%s\"",
             v == NULL ? "" : v);
    return -1;
  }
  memcpy(host, v, (size_t)(colon - v));
  host[colon - v] = '\0';
  strcpy(port, colon + 1);
  return 0;
}

// Rank 0: listens on the coordinator's port and accepts every other rank.
static int accept_ranks(const char* port, int64_t deadline) {
  struct addrinfo hints = {0}, *addr = NULL;
  hints.ai_family = AF_INET6;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  int listener = -1;
  // IPv6 with v4-mapped addresses, falling back to IPv4 where IPv6 is off.
  for (int family = 0; family < 2 && listener < 0; family++) {
    hints.ai_family = family == 0 ? AF_INET6 : AF_INET;
    if (getaddrinfo(NULL, port, &hints, &addr) != 0) continue;
    int fd = socket(addr->ai_family, addr->ai_socktype, addr->ai_protocol);
    int yes = 1, no = 0;
    if (fd >= 0) {
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
      if (family == 0) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);
      if (bind(fd, addr->ai_addr, addr->ai_addrlen) == 0 && listen(fd, state.size) == 0)
        listener = fd;
      else
        close(fd);
    }
    freeaddrinfo(addr);
  }
  if (listener < 0) {
    complain("cannot listen on port %s: %s", port, strerror(errno));
    return -1;
  }
  // Every other rank connects twice: its collective and its heartbeat connection.
  int joined = 1, connections = 0;
  while (connections < 2 * (state.size - 1)) {
    if (wait_ready(listener, POLLIN, deadline) != 0) {
      complain("only %d of %d ranks joined within %d s; missing:", joined, state.size,
               state.timeout_ms / 1000);
      for (int r = 1; r < state.size; r++)
        if (state.peer[r] < 0 || state.beat[r] < 0) fprintf(stderr, "  rank %d\n", r);
      close(listener);
      return -1;
    }
    int fd = accept(listener, NULL, NULL);
    if (fd < 0) continue;
    uint32_t hello[3];
    int ok = recv_all(fd, hello, sizeof hello, -1) == 0 &&
             (hello[0] == HELLO_MAGIC || hello[0] == HEARTBEAT_MAGIC) &&
             (int)hello[2] == state.size && hello[1] != 0 && (int)hello[1] < state.size;
    int* slot = !ok ? NULL : hello[0] == HELLO_MAGIC ? &state.peer[hello[1]] : &state.beat[hello[1]];
    if (slot == NULL || *slot >= 0) {
      complain("ignoring a connection that is not a missing rank of this run");
      close(fd);
      continue;
    }
    *slot = fd;
    connections++;
    if (state.peer[hello[1]] >= 0 && state.beat[hello[1]] >= 0) joined++;
  }
  close(listener);
  return 0;
}

// Any other rank: connects to rank 0, retrying until it listens or the deadline passes, and
// says which rank it is and which connection (`magic`) this is.
static int connect_rank0(const char* host, const char* port, uint32_t magic, int64_t deadline) {
  struct addrinfo hints = {0}, *addrs = NULL;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int gai = getaddrinfo(host, port, &hints, &addrs);
  if (gai != 0) {
    complain("cannot resolve coordinator %s: %s", host, gai_strerror(gai));
    return -1;
  }
  int fd = -1;
  while (fd < 0 && now_ms() < deadline) {
    for (struct addrinfo* a = addrs; a != NULL && fd < 0; a = a->ai_next) {
      int s = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      if (s < 0) continue;
      if (connect(s, a->ai_addr, a->ai_addrlen) == 0)
        fd = s;
      else
        close(s);
    }
    if (fd < 0) usleep(100 * 1000);
  }
  freeaddrinfo(addrs);
  if (fd < 0) {
    complain("rank 0 did not accept connections at %s:%s within %d s", host, port,
             state.timeout_ms / 1000);
    return -1;
  }
  uint32_t hello[3] = {magic, (uint32_t)state.rank, (uint32_t)state.size};
  if (send_all(fd, hello, sizeof hello, 0) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Any other rank: its collective and heartbeat connections to rank 0.
static int join_rank0(const char* host, const char* port, int64_t deadline) {
  state.peer[0] = connect_rank0(host, port, HELLO_MAGIC, deadline);
  if (state.peer[0] < 0) return -1;
  state.beat[0] = connect_rank0(host, port, HEARTBEAT_MAGIC, deadline);
  return state.beat[0] < 0 ? -1 : 0;
}

// The ranks running on this host (same host name), for Realm's shared-memory transport.
static int find_shared_ranks(bootstrap_handle_t* h) {
  char mine[HOST_BYTES] = {0};
  gethostname(mine, sizeof mine - 1);
  char* all = NULL;
  uint64_t* offsets = calloc((size_t)state.size + 1, sizeof(uint64_t));
  h->shared_ranks = calloc((size_t)state.size, sizeof(int));
  if (offsets == NULL || h->shared_ranks == NULL ||
      exchange(mine, HOST_BYTES, &all, offsets) != 0) {
    free(offsets);
    return -1;
  }
  h->num_shared_ranks = 0;
  for (int r = 0; r < state.size; r++)
    if (memcmp(all + offsets[r], mine, HOST_BYTES) == 0)
      h->shared_ranks[h->num_shared_ranks++] = r;
  free(all);
  free(offsets);
  return 0;
}

int realm_ucp_bootstrap_plugin_init(void* arg, bootstrap_handle_t* h) {
  (void)arg;
  long rank = env_long("DIFFUSE_RANK"), size = env_long("DIFFUSE_RANKS");
  long timeout = env_long("DIFFUSE_BOOTSTRAP_TIMEOUT");
  state.rank = (int)rank;
  state.size = (int)size;
  state.timeout_ms = (int)((timeout > 0 ? timeout : 60) * 1000);
  // Heartbeats several times per timeout, at most a second apart.
  state.silence_ms = env_ms("DIFFUSE_RANK_TIMEOUT", 60);
  state.beat_ms = state.silence_ms / 5 > 1000 ? 1000 : state.silence_ms / 5 + 1;
  if (size < 1 || rank < 0 || rank >= size) {
    complain("DIFFUSE_RANK and DIFFUSE_RANKS must be set (0 <= rank < ranks)");
    return BOOTSTRAP_ERROR_INTERNAL;
  }
  state.peer = malloc(sizeof(int) * (size_t)size);
  state.beat = malloc(sizeof(int) * (size_t)size);
  if (state.peer == NULL || state.beat == NULL) return BOOTSTRAP_ERROR_INTERNAL;
  for (int r = 0; r < size; r++) state.peer[r] = state.beat[r] = -1;
  int64_t deadline = now_ms() + state.timeout_ms;
  if (size > 1) {
    char host[HOST_BYTES], port[32];
    if (coordinator(host, sizeof host, port, sizeof port) != 0) return BOOTSTRAP_ERROR_INTERNAL;
    int joined = rank == 0 ? accept_ranks(port, deadline) : join_rank0(host, port, deadline);
    if (joined != 0) return BOOTSTRAP_ERROR_INTERNAL;
    for (int r = 0; r < size; r++) {
      int yes = 1;
      if (state.peer[r] >= 0) setsockopt(state.peer[r], IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
      if (state.beat[r] >= 0) setsockopt(state.beat[r], IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    }
  }
  h->pg_rank = state.rank;
  h->pg_size = state.size;
  h->barrier = do_barrier;
  h->bcast = do_bcast;
  h->gather = do_gather;
  h->allgather = do_allgather;
  h->alltoall = do_alltoall;
  h->allreduce_ull = do_allreduce_ull;
  h->allgatherv = do_allgatherv;
  h->finalize = do_finalize;
  if (find_shared_ranks(h) != 0) return BOOTSTRAP_ERROR_INTERNAL;
  if (size > 1) state.watching = pthread_create(&state.watchdog, NULL, watch, NULL) == 0;
  return 0;
}
