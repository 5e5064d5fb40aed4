/* bench/capture/clockcost.c: ns per clock read, the floor under a timed call.
 * The shim reads rdtsc twice per driver call (before and after it), so two
 * reads bound from below what recording a call with its duration can add.
 * Measured: rdtsc back to back, and clock_gettime(CLOCK_MONOTONIC), 5 rounds.
 *
 *   gcc -O2 -o clockcost bench/capture/clockcost.c && ./clockcost
 */
#include <stdio.h>
#include <stdint.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e9+t.tv_nsec;}
static inline uint64_t tsc(void){uint32_t lo,hi;__asm__ __volatile__("rdtsc":"=a"(lo),"=d"(hi));return((uint64_t)hi<<32)|lo;}
int main(void){
  const long n=20000000; volatile uint64_t sink=0; struct timespec ts;
  for(int r=0;r<5;r++){
    double t0=now(); for(long i=0;i<n;i++) sink+=tsc(); double t1=now();
    for(long i=0;i<n;i++){clock_gettime(CLOCK_MONOTONIC,&ts); sink+=ts.tv_nsec;} double t2=now();
    printf("round %d: rdtsc %.2f ns/read, clock_gettime %.2f ns/read\n",r,(t1-t0)/n,(t2-t1)/n);
  }
  return (int)(sink&0);
}
