// What the probe's collector does each cycle, one piece at a time, in thread CPU time: a clock read,
// the /proc reads of an allocator and scheduling sample, and a bare timed wake-up (its floor).
// Build: gcc -O2 -o .gpu/wakecost tools/wakecost.c -lpthread; run it here and on the GPU host.
#define _GNU_SOURCE
#include <stdio.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include <pthread.h>
#include <sys/syscall.h>
static double cpu_ns(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec*1e9+t.tv_nsec;}
static double wall_ns(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
int main(void){
  char buf[256]; int n;
  FILE*f=fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource","r");
  if(f&&fgets(buf,sizeof buf,f))printf("clocksource: %s",buf); if(f)fclose(f);
  f=fopen("/sys/devices/system/clocksource/clocksource0/available_clocksource","r");
  if(f&&fgets(buf,sizeof buf,f))printf("available: %s",buf); if(f)fclose(f);
  double c0=cpu_ns(),w0=wall_ns(); struct timespec t;
  for(int i=0;i<1000000;i++)clock_gettime(CLOCK_MONOTONIC,&t);
  printf("clock_gettime(MONOTONIC): %.1f ns cpu, %.1f ns wall\n",(cpu_ns()-c0)/1e6,(wall_ns()-w0)/1e6);
  int fd=open("/proc/self/statm",O_RDONLY); c0=cpu_ns();
  for(int i=0;i<10000;i++)n=pread(fd,buf,128,0);
  printf("pread statm: %.2f us cpu\n",(cpu_ns()-c0)/1e4/1e3);
  sprintf(buf,"/proc/self/task/%ld/schedstat",(long)syscall(SYS_gettid)); fd=open(buf,O_RDONLY); c0=cpu_ns();
  for(int i=0;i<10000;i++)n=pread(fd,buf,96,0);
  printf("pread schedstat: %.2f us cpu\n",(cpu_ns()-c0)/1e4/1e3);
  for(int ms=1;ms<=10;ms*=10){ c0=cpu_ns(); w0=wall_ns();
    struct timespec d={0,ms*1000000L}; for(int i=0;i<200;i++)nanosleep(&d,0);
    printf("nanosleep %d ms: %.1f us cpu per wake (wall %.2f ms)\n",ms,(cpu_ns()-c0)/200/1e3,(wall_ns()-w0)/200/1e6);}
  pthread_mutex_t m=PTHREAD_MUTEX_INITIALIZER; pthread_cond_t cv; pthread_condattr_t a; pthread_condattr_init(&a); pthread_condattr_setclock(&a,CLOCK_MONOTONIC); pthread_cond_init(&cv,&a);
  c0=cpu_ns(); pthread_mutex_lock(&m);
  for(int i=0;i<200;i++){clock_gettime(CLOCK_MONOTONIC,&t); t.tv_nsec+=10000000; if(t.tv_nsec>=1000000000){t.tv_sec++;t.tv_nsec-=1000000000;} pthread_cond_timedwait(&cv,&m,&t);}
  printf("futex timed wait 10 ms: %.1f us cpu per wake\n",(cpu_ns()-c0)/200/1e3);
  (void)n; return 0;}
