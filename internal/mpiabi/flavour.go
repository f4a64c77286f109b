package mpiabi

// Flavour is the MPI implementation family a library build belongs to:
// what decides how its handles, communicators and requests are laid out.
type Flavour uint8

const (
	// NoFlavour: not an MPI C library mpiabi knows.
	NoFlavour Flavour = iota
	// OpenMPI: Open MPI's libmpi.so (MPI_Comm is a pointer).
	OpenMPI
	// MPICH: MPICH's libmpich.so and its derivatives (MPI_Comm is an
	// int handle into the library's object tables).
	MPICH
)

func (f Flavour) String() string {
	switch f {
	case OpenMPI:
		return "Open MPI"
	case MPICH:
		return "MPICH"
	}
	return "no MPI library"
}
