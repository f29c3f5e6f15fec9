/* A program that behaves as daemons do: once running, it closes every fd >= 3 it may have
 * inherited, then opens its own files and uses them. Under the preload, the numbers it closes
 * include the probe's (tokio's epoll and waker, its signal pipe, the socket, /proc files):
 * the probe must never use a number the program now owns. Used by tests/preload_fds.rs.
 *
 *   daemon_fds MODE DIR [LINES]
 *   MODE: loop (close(3..1023)), range (close_range(3, ~0, 0)), from (closefrom(3))
 *
 * It writes LINES lines to DIR/out.txt one write() each, reading the file back every 100
 * lines, then reads it whole; a second file is read over and over meanwhile. It prints what
 * it found and exits 1 on any difference. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The threads of this process now (the probe's among them, under the preload). */
static int threads(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  int n = 0;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "Threads: %d", &n) == 1) break;
  if (f) fclose(f);
  return n;
}

static void nap(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, 0);
}

static int line_of(char *buf, size_t cap, long i) {
  return snprintf(buf, cap, "line %06ld: the daemon's own data, not the probe's\n", i);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: daemon_fds loop|range|from DIR [LINES]\n");
    return 2;
  }
  const char *mode = argv[1];
  long lines = argc > 3 ? atol(argv[3]) : 2000;
  char out_path[4096], side_path[4096];
  snprintf(out_path, sizeof out_path, "%s/out.txt", argv[2]);
  snprintf(side_path, sizeof side_path, "%s/side.txt", argv[2]);

  /* Wait until the probe (if any) has started: its socket is bound after its other fds
   * (the recording among them) are open; without a probe, only until its threads would be. */
  const char *sock = getenv("PROOFSCOPE_SOCKET");
  if (sock && strcmp(sock, "none") != 0) {
    for (int i = 0; i < 2000 && access(sock, F_OK) != 0; i++) nap(5);
  } else {
    for (int i = 0; i < 200 && threads() < 3; i++) nap(10);
  }
  nap(100);

  if (strcmp(mode, "loop") == 0) {
    for (int fd = 3; fd < 1024; fd++) close(fd);
  } else if (strcmp(mode, "range") == 0) {
    if (close_range(3, ~0U, 0) != 0) perror("close_range");
  } else if (strcmp(mode, "from") == 0) {
    closefrom(3);
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }

  int side = open(side_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  int out = open(out_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (side < 0 || out < 0) {
    perror("open");
    return 1;
  }
  const char side_text[] = "a side file the daemon reads back again and again\n";
  if (write(side, side_text, sizeof side_text - 1) != (ssize_t)(sizeof side_text - 1)) {
    perror("write side");
    return 1;
  }
  long bad_reads = 0, short_writes = 0;
  char buf[256], back[256];
  off_t at = 0;
  for (long i = 0; i < lines; i++) {
    int n = line_of(buf, sizeof buf, i);
    if (write(out, buf, n) != n) short_writes++;
    if (i % 100 == 99) {
      /* Read back the line just written, and the side file. */
      if (pread(out, back, n, at) != n || memcmp(back, buf, n) != 0) bad_reads++;
      if (pread(side, back, sizeof side_text - 1, 0) != (ssize_t)(sizeof side_text - 1) ||
          memcmp(back, side_text, sizeof side_text - 1) != 0)
        bad_reads++;
      nap(2);
    }
    at += n;
  }
  /* The whole file, line by line. */
  long wrong_lines = 0;
  FILE *f = fdopen(dup(out), "r");
  if (!f) {
    perror("fdopen");
    return 1;
  }
  rewind(f);
  long i = 0;
  while (fgets(back, sizeof back, f)) {
    line_of(buf, sizeof buf, i);
    if (strcmp(back, buf) != 0) wrong_lines++;
    i++;
  }
  fclose(f);
  close(out);
  close(side);
  printf("lines %ld of %ld, wrong %ld, bad reads %ld, short writes %ld\n", i, lines,
         wrong_lines, bad_reads, short_writes);
  return (i == lines && wrong_lines == 0 && bad_reads == 0 && short_writes == 0) ? 0 : 1;
}
