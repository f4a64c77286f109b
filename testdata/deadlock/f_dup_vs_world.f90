! Fortran: rank 0 waits in a barrier on a duplicate of WORLD, rank 1 in
! one on WORLD.
! np: 2
! expect: missing-collective rank=0 call=MPI_Barrier comm=WORLD waiting=1
! expect: missing-collective rank=1 call=MPI_Barrier comm=other waiting=0
program f_dup_vs_world
  use mpi
  implicit none
  integer :: ierr, rank, dup
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    print '(a)', 'hung'
    flush(6)
  end if
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  if (rank == 0) then
    call MPI_Barrier(dup, ierr)
  else
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
  end if
  call MPI_Finalize(ierr)
end program f_dup_vs_world
