! Fortran: rank 1 leaves without the barrier ranks 0 and 2 wait in.
! np: 3
! expect: finalized rank=1 call=MPI_Barrier waiting=0,2
program f_missing_barrier
  use mpi
  implicit none
  integer :: ierr, rank
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    print '(a)', 'hung'
    flush(6)
  end if
  if (rank /= 1) call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
end program f_missing_barrier
