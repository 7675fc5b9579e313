/* Machine description from the cpu backend's own probe (model, memory),
 * sysconf and uname; peak RSS from getrusage. */
#include "bench_machine.h"

#include "registry.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

void lkv_bench_machine_probe(lkv_bench_machine *out)
{
    memset(out, 0, sizeof *out);
    lkv_device_report cpu;
    int n = 0;
    if (lkv_backend_cpu.probe(&cpu, 1, &n) == LKV_OK && n == 1) {
        snprintf(out->cpu, sizeof out->cpu, "%s", cpu.name[0] ? cpu.name : "unknown CPU");
        out->memory_bytes = cpu.memory_bytes;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    out->cores = cores > 0 ? (int)cores : 0;
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(out->os, sizeof out->os, "%.40s %.60s %.20s", u.sysname, u.release, u.machine);
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(out->date, sizeof out->date, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int64_t lkv_bench_peak_rss(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (int64_t)ru.ru_maxrss * 1024; /* Linux reports KiB */
}
