/* Linked into every executable of the sanitizer build: drivers stay mapped
 * for the life of the process. The Vulkan loader unloads a driver (ICD)
 * when its instance is destroyed; a block the driver keeps in a static (as
 * Mesa's CPU detection does on AMD CPUs) then becomes a leak that names no
 * module, so no suppression can tell it from lazykv's own, and the address
 * may even be attributed to whatever library is mapped there next. Kept
 * mapped, the driver's statics still point at their blocks and LeakSanitizer
 * sees them reachable, as they are in a process that never unloads it; a
 * leak of lazykv's own is reported as before (tests/vulkan/driver_leak.sh).
 * The executable's definition comes first in symbol lookup, before libc's
 * and the sanitizer's, for every library. LKV_TEST_UNLOAD_DRIVERS=1 restores
 * the real dlclose, to show the leak it causes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

int dlclose(void *handle)
{
    const char *unload = getenv("LKV_TEST_UNLOAD_DRIVERS");
    if (!unload || strcmp(unload, "1") != 0)
        return 0;
    void *sym = dlsym(RTLD_NEXT, "dlclose");
    int (*real)(void *) = NULL;
    memcpy(&real, &sym, sizeof sym);
    return real ? real(handle) : 0;
}
