/*
 * ob1_layout.c: not an MPI program. Built with Open MPI's mpicc as a shared
 * library with -g, its DWARF describes the request, communicator, group
 * and process objects (and the enums of request states and types) exactly
 * as the installed Open MPI headers lay them out, as the DWARF Open MPI
 * always builds into libmpi.so for its debugger support does
 * (ompi/debuggers/ompi_debuggers.c is compiled with -g whatever CFLAGS
 * say). The probes tests read it to check that the ob1 request and
 * communicator layouts read from DWARF equal the table of verified builds;
 * it defines ompi_communicator_t_class, as libmpi.so does, for the latter.
 */
#include "ompi_config.h"
#include "ompi/mca/pml/base/pml_base_request.h"
#include "ompi/communicator/communicator.h"
#include "ompi/group/group.h"
#include "ompi/proc/proc.h"

/* One object of each type keeps its complete definition in the DWARF. */
mca_pml_base_request_t mpiprobe_pml_request;
ompi_communicator_t mpiprobe_comm;
ompi_group_t mpiprobe_group;
ompi_proc_t mpiprobe_proc;
ompi_request_state_t mpiprobe_state;
mca_pml_base_request_type_t mpiprobe_type;
opal_class_t ompi_communicator_t_class;
