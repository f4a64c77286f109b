! Fortran: rank 1 calls the barrier and the allreduce in the other order.
! np: 2
! expect: mismatch ranks=0,1 comm=WORLD
program f_swapped
  use mpi
  implicit none
  integer :: ierr, rank, v, s
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    print '(a)', 'hung'
    flush(6)
  end if
  v = 1
  if (rank == 0) then
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call MPI_Allreduce(v, s, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  else
    call MPI_Allreduce(v, s, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
  end if
  call MPI_Finalize(ierr)
end program f_swapped
