/* The app loop's floor for bench_app_loop.py: what the Q3-alone loop does at the syscall level and
 * nothing else, in C (no interpreter, no XR runtime, no protocol), so the benchmark can print how
 * much of its frame p99 and CPU this machine charges any 90 Hz loop that sends 60 datagrams a second.
 *
 * Per frame: sleep to the frame's absolute deadline (clock_nanosleep, TIMER_ABSTIME, CLOCK_MONOTONIC,
 * timer slack 1 ns: headcast's pacer by default, no spin), a clock read on waking; on the 60 Hz ticks
 * one 43-byte UDP send to a receiver on loopback; every third frame one non-blocking recv (EAGAIN);
 * a clock read at the frame's end. The receiver is a child process blocked in recv under SCHED_IDLE
 * and nice 19, as the benchmark's local servers run.
 *
 * Usage: app_loop_floor SECONDS [FRAME_HZ [TICK_HZ]]   (default 90 and 60)
 * Prints "frames cpu_seconds wall_seconds" on the first line (this process's CPU; the receiver's is
 * its own), then each frame's cost (its wake to the end of its work) in nanoseconds, one per line.
 * Linux (SCHED_IDLE, PR_SET_TIMERSLACK); written for this project. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NS 1000000000LL

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * NS + t.tv_nsec;
}

static void receive_forever(int fd) {
    struct sched_param none = {0};
    sched_setscheduler(0, SCHED_IDLE, &none);
    setpriority(PRIO_PROCESS, 0, 19);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    char buf[2048];
    for (;;)
        if (recv(fd, buf, sizeof buf, 0) < 0 && errno != EINTR) _exit(0);
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: %s SECONDS [FRAME_HZ [TICK_HZ]]\n", argv[0]);
        return 2;
    }
    double seconds = atof(argv[1]), hz = argc > 2 ? atof(argv[2]) : 90.0, tick_hz = argc > 3 ? atof(argv[3]) : 60.0;
    if (!(seconds > 0) || !(hz > 0) || !(tick_hz > 0)) {
        fprintf(stderr, "%s: SECONDS, FRAME_HZ and TICK_HZ must be positive\n", argv[0]);
        return 2;
    }
    int server = socket(AF_INET, SOCK_DGRAM, 0), sock = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (server < 0 || sock < 0 || bind(server, (struct sockaddr *)&a, sizeof a) ||
        getsockname(server, (struct sockaddr *)&a, &len) || connect(sock, (struct sockaddr *)&a, sizeof a)) {
        perror("app_loop_floor: socket");
        return 1;
    }
    pid_t child = fork();
    if (child < 0) {
        perror("app_loop_floor: fork");
        return 1;
    }
    if (child == 0) {
        close(sock);
        receive_forever(server);
    }
    close(server);
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);

    long long period = (long long)(NS / hz), tick = (long long)(NS / tick_hz);
    long cap = (long)(seconds * hz) + 16, frames = 0;
    long long *cost = malloc(sizeof *cost * (size_t)cap);
    if (cost == NULL) {
        perror("app_loop_floor: malloc");
        return 1;
    }
    char packet[43], buf[2048];
    memset(packet, 0x5a, sizeof packet);
    struct timespec cpu0, cpu1;
    long long t0 = now_ns(), end = t0 + (long long)(seconds * NS), deadline = t0 + period, next_tick = t0;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu0);
    while (deadline <= end && frames < cap) {
        struct timespec ts = {(time_t)(deadline / NS), (long)(deadline % NS)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
        }
        long long woke = now_ns();
        if (woke >= next_tick) {
            send(sock, packet, sizeof packet, 0);
            next_tick += tick;
            if (woke - next_tick > tick) next_tick = woke + tick; /* fell behind: no burst to catch up */
        }
        if (frames % 3 == 0) recv(sock, buf, sizeof buf, MSG_DONTWAIT); /* nothing comes back: EAGAIN */
        cost[frames++] = now_ns() - woke;
        deadline += period;
        if (woke - deadline > period) deadline = woke + period; /* overslept a whole frame: resync */
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu1);
    double wall = (now_ns() - t0) / (double)NS;
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    printf("%ld %.9f %.9f\n", frames,
           (cpu1.tv_sec - cpu0.tv_sec) + (cpu1.tv_nsec - cpu0.tv_nsec) / (double)NS, wall);
    for (long i = 0; i < frames; i++) printf("%lld\n", cost[i]);
    free(cost);
    return 0;
}
