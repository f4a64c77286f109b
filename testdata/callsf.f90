! callsf: trace mode's test of which calls are the application's, through
! the `use mpi` bindings. Ranks pair up (0-1, 2-3, ...; an even number of
! ranks). Each of `iters` iterations makes exactly one Irecv, Send, Wait,
! Comm_split, Allreduce (on the split communicator), Comm_free and Wtime;
! around the loop, one Init, Comm_rank, Comm_size, Barrier and Finalize.
! The bindings convert handles (MPI_Comm_f2c, MPI_Request_c2f,
! MPI_Status_c2f...) before and after their C call: none of that may be
! recorded.
!
!   callsf [iterations]      (default 5)
program callsf
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, i, iters, peer, req, newcomm, sbuf, rbuf, total
  integer :: status(MPI_STATUS_SIZE)
  double precision :: t
  character(len=16) :: arg
  iters = 5
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) iters
  end if
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  peer = ieor(rank, 1)
  t = 0
  do i = 1, iters
    call MPI_Irecv(rbuf, 1, MPI_INTEGER, peer, i, MPI_COMM_WORLD, req, ierr)
    sbuf = rank * 100 + i
    call MPI_Send(sbuf, 1, MPI_INTEGER, peer, i, MPI_COMM_WORLD, ierr)
    call MPI_Wait(req, status, ierr)
    call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, newcomm, ierr)
    call MPI_Allreduce(sbuf, total, 1, MPI_INTEGER, MPI_SUM, newcomm, ierr)
    call MPI_Comm_free(newcomm, ierr)
    t = t + MPI_Wtime()
  end do
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0, a, i0)', 'callsf iters=', iters, ' last=', rbuf
  call MPI_Finalize(ierr)
end program callsf
