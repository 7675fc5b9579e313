/* `lazykv conformance`: placeholder until the suite lands. */
#include "cli.h"

int cmd_conformance(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return cli_error("conformance", "not implemented yet");
}
