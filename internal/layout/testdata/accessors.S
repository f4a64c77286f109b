# Accessors in the shape of Open MPI's and MPICH's, for the tests of internal/layout.
# Rebuild accessors.hex: as -o s.o accessors.S && ld -Ttext=0x1000 -Tdata=0x5000 -o s.elf s.o &&
#   objcopy -O binary --only-section=.text s.elf t.bin && xxd -p t.bin > accessors.hex
.text
.globl ompi_rank
ompi_rank:
  push %rbp
  mov %rsi,%rbp
  push %rbx
  mov %rdi,%rbx
  test %rbx,%rbx
  je 1f
  testb $0x30,0xe8(%rbx)
  jne 1f
  mov 0xe4(%rbx),%eax
  mov %eax,0x0(%rbp)
  pop %rbx
  pop %rbp
  xor %eax,%eax
  ret
1:
  xor %esi,%esi
  mov 0x140(%rbx),%edx
  pop %rbx
  pop %rbp
  mov $5,%eax
  ret
.globl ompi_size
ompi_size:
  mov 0xf8(%rdi),%rax
  mov 0x10(%rax),%eax
  mov %eax,(%rsi)
  xor %eax,%eax
  ret
.globl ompi_name
ompi_name:
  push %rbx
  mov %rdi,%rbx
  lea 0xa0(%rbx),%r14
  mov %rsi,%rdi
  mov $0x40,%edx
  mov %r14,%rsi
  call ext
  pop %rbx
  ret
.globl ompi_c2f
ompi_c2f:
  mov 0x128(%rdi),%eax
  ret
.globl mpich_rank
mpich_rank:
  push %r13
  push %rbp
  mov %rsi,%rbp
  push %rbx
  mov %edi,%ebx
  mov %ebx,%eax
  shr $0x1e,%eax
  cmp $2,%eax
  je 2f
  cmp $3,%eax
  je 3f
  mov %ebx,%r13d
  and $0x3ffffff,%r13d
  movslq %r13d,%r13
  imul $0x368,%r13,%r13
  add slot_builtin(%rip),%r13
4:
  mov 0x48(%r13),%eax
  mov %eax,0(%rbp)
  pop %rbx
  pop %rbp
  pop %r13
  xor %eax,%eax
  ret
2:
  mov %ebx,%r13d
  and $0x3ffffff,%r13d
  imul $0x368,%r13,%r13
  add slot_direct(%rip),%r13
  jmp 4b
3:
  lea objmem(%rip),%rdx
  mov %ebx,%eax
  sar $0xc,%eax
  and $0x3fff,%eax
  mov %ebx,%r13d
  mov 0x10(%rdx),%rcx
  cltq
  and $0xfff,%r13d
  imul 0x28(%rdx),%r13d
  movslq %r13d,%r13
  add (%rcx,%rax,8),%r13
  jmp 4b
.globl mpich_name
mpich_name:
  mov %edi,%ebx
  and $0x3ffffff,%ebx
  imul $0x368,%rbx,%rbx
  add slot_builtin(%rip),%rbx
  mov %rbx,%rdi
  call impl
  ret
impl:
  push %rbp
  mov %rdx,%rbp
  mov $0x80,%edx
  mov %rsi,%rbx
  lea 0x74(%rdi),%rsi
  mov %rbx,%rdi
  call ext
  mov %eax,0(%rbp)
  ret
.globl loop
loop:
  jmp loop
# MPICH built with ch3:sock: the object size 0x340 = 13 * 64 as lea, lea, shl.
.globl mpich_rank_lea
mpich_rank_lea:
  push %rbp
  mov %rsi,%rbp
  mov %edi,%ebx
  mov %ebx,%r12d
  and $0x3ffffff,%r12d
  movslq %r12d,%rax
  lea (%rax,%rax,2),%rdx
  lea (%rax,%rdx,4),%r13
  shl $0x6,%r13
  add slot_builtin(%rip),%r13
  mov 0x48(%r13),%eax
  mov %eax,0(%rbp)
  pop %rbp
  ret
# Unoptimized Open MPI (--enable-debug): arguments kept on the stack, the
# rank read by an out-of-line ompi_comm_rank.
.globl ompi_rank_O0
ompi_rank_O0:
  push %rbp
  mov %rsp,%rbp
  sub $0x20,%rsp
  mov %rdi,-0x18(%rbp)
  mov %rsi,-0x20(%rbp)
  mov -0x18(%rbp),%rax
  mov %rax,%rdi
  call comm_rank_O0
  mov -0x20(%rbp),%rdx
  mov %eax,(%rdx)
  mov $0x0,%eax
  leave
  ret
comm_rank_O0:
  push %rbp
  mov %rsp,%rbp
  mov %rdi,-0x8(%rbp)
  mov -0x8(%rbp),%rax
  mov 0x13c(%rax),%eax
  pop %rbp
  ret
# MPICH 4.2's shape: several handle decodings (builtin or direct, with or
# without error checks: flags in the other arguments here) join at the
# first load through the object; the direct one arrives there fourth.
.globl mpich_rank_joined
mpich_rank_joined:
  push %rbp
  mov %rsi,%r12
  mov %edi,%ebx
  test %edx,%edx
  je 7f
  test %ecx,%ecx
  je 5f
  test %r8d,%r8d
  je 6f
  mov %ebx,%ebp
  and $0x3ffffff,%ebp
  imul $0x548,%rbp,%rbp
  add slot_builtin(%rip),%rbp
4:
  mov 0x4(%rbp),%eax
  mov 0x48(%rbp),%eax
  mov %eax,0(%r12)
  pop %rbp
  xor %eax,%eax
  ret
5:
  mov %ebx,%ebp
  and $0x3,%ebp
  imul $0x548,%rbp,%rbp
  add slot_builtin(%rip),%rbp
  jmp 4b
6:
  movslq %ebx,%rbp
  and $0x3ffffff,%rbp
  imul $0x548,%rbp,%rbp
  add slot_builtin(%rip),%rbp
  jmp 4b
7:
  mov %ebx,%ebp
  and $0x3ffffff,%ebp
  imul $0x548,%rbp,%rbp
  add slot_direct(%rip),%rbp
  jmp 4b
.data
slot_builtin: .quad 0
slot_direct: .quad 0
objmem: .quad 0
ext = 0x900000
