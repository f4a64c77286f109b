! Fortran: both ranks receive from each other before sending.
! np: 2
! expect: cycle 0->1->0
program f_recv_cycle
  use mpi
  implicit none
  integer :: ierr, rank, v
  integer :: st(MPI_STATUS_SIZE)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    print '(a)', 'hung'
    flush(6)
  end if
  call MPI_Recv(v, 1, MPI_INTEGER, 1 - rank, 0, MPI_COMM_WORLD, st, ierr)
  call MPI_Send(v, 1, MPI_INTEGER, 1 - rank, 0, MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
end program f_recv_cycle
