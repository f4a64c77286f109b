/*
 * freelist_layout.c: not an MPI program. Built with Open MPI's mpicc as a
 * shared library with -g, its DWARF describes opal_free_list_t exactly as
 * the installed Open MPI headers (and their opal_config.h) lay it out. The
 * probes and elfx tests read that DWARF to check mpiprobe's table of verified
 * libopen-pal builds, and use the library as the separate debug file of a
 * libopen-pal whose build id mpiprobe does not know.
 */
#include "opal_config.h"
#include "opal/class/opal_free_list.h"

/* One object of the type keeps its complete definition in the DWARF. */
opal_free_list_t mpiprobe_free_list_layout;
