! loopsf: the Fortran twin of loops.c for trace mode's tests. Two barriers
! on different lines must show as two call sites; the loop's allreduce is
! called through the mpif.h binding, and its call site is this file's line.
!
!   loopsf [iterations]      (default 4)
program loopsf
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, i, iters, n
  double precision :: x, y
  character(len=16) :: arg
  iters = 4
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) iters
  end if
  n = 0
  x = 1.0d0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Bcast(n, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  do i = 1, iters
    call MPI_Allreduce(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  end do
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
end program loopsf
