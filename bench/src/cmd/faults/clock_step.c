/* bench faults --scenario clock-step: an LD_PRELOAD shim that steps the time
 * of day of the one process it is preloaded into (the harness), as an NTP
 * step or `date -s` would, while the monotonic and boot clocks stay true.
 *
 * BENCH_CLOCK_STEPS="<ms>:<offset_s>,..." (at most MAX_STEPS): from <ms>
 * milliseconds after the process loaded (on the monotonic clock), the
 * realtime clock reads <offset_s> seconds off the truth, until the next
 * step. "300:86400,1500:-86400" is a day ahead at 0.3 s, a day behind from
 * 1.5 s. clock_gettime(CLOCK_REALTIME*, CLOCK_TAI), gettimeofday and time
 * are stepped; every other clock is the kernel's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

#define MAX_STEPS 8

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

static clock_gettime_fn real_clock_gettime;
static long long loaded_ms;
static long long step_at_ms[MAX_STEPS];
static long long step_offset_s[MAX_STEPS];
static int steps;

static long long mono_ms(void) {
  struct timespec t;
  if (real_clock_gettime(CLOCK_MONOTONIC, &t) != 0) return 0;
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Runs at load, before main and before any thread: no lock is needed. */
__attribute__((constructor)) static void clock_step_init(void) {
  real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
  if (!real_clock_gettime) return;
  loaded_ms = mono_ms();
  const char *s = getenv("BENCH_CLOCK_STEPS");
  while (s && *s && steps < MAX_STEPS) {
    char *end;
    long long at = strtoll(s, &end, 10);
    if (*end != ':') break;
    long long off = strtoll(end + 1, &end, 10);
    step_at_ms[steps] = at;
    step_offset_s[steps] = off;
    steps++;
    if (*end != ',') break;
    s = end + 1;
  }
}

/* The offset of the realtime clock now: the last step whose time has come. */
static long long offset_s(void) {
  long long since = mono_ms() - loaded_ms, off = 0;
  for (int i = 0; i < steps; i++)
    if (since >= step_at_ms[i]) off = step_offset_s[i];
  return off;
}

static int is_time_of_day(clockid_t c) {
  return c == CLOCK_REALTIME || c == CLOCK_REALTIME_COARSE || c == CLOCK_TAI;
}

int clock_gettime(clockid_t c, struct timespec *ts) {
  if (!real_clock_gettime) return -1;
  int r = real_clock_gettime(c, ts);
  if (r == 0 && is_time_of_day(c)) ts->tv_sec += offset_s();
  return r;
}

int gettimeofday(struct timeval *tv, void *tz) {
  struct timespec ts;
  (void)tz;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
  tv->tv_sec = ts.tv_sec;
  tv->tv_usec = ts.tv_nsec / 1000;
  return 0;
}

time_t time(time_t *out) {
  struct timespec ts;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return (time_t)-1;
  if (out) *out = ts.tv_sec;
  return ts.tv_sec;
}
