# Functions that keep their arguments across a wait, for ArgHomes's tests.
# Rebuild frames.hex: as -o f.o frames.S && ld -Ttext=0x1000 -o f.elf f.o &&
#   objcopy -O binary --only-section=.text f.elf f.bin && xxd -p f.bin > frames.hex
# and read the labels' addresses with nm f.elf.
.text
# regs(buf, count, type, dest, tag, comm): the 4.2.3 PMPI_Ssend shape,
# arguments moved to callee-saved registers.
.globl regs
regs:
  push %r15
  push %r14
  mov %r8d,%r14d
  push %r12
  mov %r9d,%r12d
  push %rbp
  mov %ecx,%ebp
  push %rbx
  sub $0x20,%rsp
  mov %rdi,(%rsp)
  test %esi,%esi
  je 1f
  sub $0x8,%rsp
  push %rax
  push $0
  call regs
  add $0x18,%rsp
  mov %ebp,%ecx
  call regs
.globl regs_wait
regs_wait:
  test %eax,%eax
  jne regs_wait
1:
  add $0x20,%rsp
  pop %rbx
  pop %rbp
  pop %r12
  pop %r14
  pop %r15
  ret
# stack(source, tag, comm): source and comm in stack words, the tag
# sign-extended into r14; a loop around the wait.
.globl stack
stack:
  push %r14
  push %rbx
  sub $0x48,%rsp
  mov %edi,0x14(%rsp)
  mov %edx,0x20(%rsp)
  movslq %esi,%r14
  mov $1,%ebx
2:
  mov 0x14(%rsp),%edi
  call stack
.globl stack_wait
stack_wait:
  test %eax,%eax
  je 2b
  add $0x48,%rsp
  pop %rbx
  pop %r14
  ret
# clobbered(a, b): a is kept in rbx but one path overwrites rbx before the
# paths join, and b's word is written on one path only.
.globl clobbered
clobbered:
  push %rbx
  sub $0x10,%rsp
  mov %edi,%ebx
  test %esi,%esi
  je 3f
  mov %esi,0x8(%rsp)
  xor %ebx,%ebx
3:
  call clobbered
.globl clobbered_wait
clobbered_wait:
  add $0x10,%rsp
  pop %rbx
  ret
# framed(a): an unoptimized frame: the argument at -0x14(%rbp).
.globl framed
framed:
  push %rbp
  mov %rsp,%rbp
  sub $0x20,%rsp
  mov %edi,-0x14(%rbp)
  call framed
.globl framed_wait
framed_wait:
  leave
  ret
# conflict(a, b, c): rbx holds a on one path and b on the other.
.globl conflict
conflict:
  push %rbx
  test %edx,%edx
  je 4f
  mov %edi,%ebx
  jmp 5f
4:
  mov %esi,%ebx
5:
  call conflict
.globl conflict_wait
conflict_wait:
  pop %rbx
  ret
.globl end
end:
