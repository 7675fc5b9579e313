/* Machine description from /proc, sysconf and uname; peak RSS from getrusage. */
#include "bench_machine.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

static void cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        const char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon)
            continue;
        colon++;
        while (*colon == ' ')
            colon++;
        snprintf(buf, len, "%.*s", (int)strcspn(colon, "\n"), colon);
        break;
    }
    fclose(f);
}

void lkv_bench_machine_probe(lkv_bench_machine *out)
{
    memset(out, 0, sizeof *out);
    cpu_model(out->cpu, sizeof out->cpu);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    out->cores = cores > 0 ? (int)cores : 0;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
        out->memory_bytes = (uint64_t)pages * (uint64_t)page;
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
