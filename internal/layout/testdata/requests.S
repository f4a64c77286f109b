# Functions that fill in an object they allocate, for ObjectStores's tests.
# Rebuild requests.hex: as -o r.o requests.S && ld -Ttext=0x1000 -o r.elf r.o &&
#   objcopy -O binary --only-section=.text r.elf r.bin && xxd -p r.bin > requests.hex
# and read the labels' addresses with nm r.elf.
.text
# irecv(buf, count, type, src, tag, comm, **req): the Open MPI 4.1
# mca_pml_ob1_irecv shape. Arguments moved to callee-saved registers, the
# object taken from a global list or, on a slow path, from a call; the
# object filled in after the paths join; *req written through the
# argument.
.globl irecv
irecv:
  push %r15
  mov %r8d,%r10d
  mov %ecx,%r15d
  push %r14
  mov %rdi,%r14
  push %rbx
  mov 0x20(%rsp),%rbx          # req, the stack argument
  mov glob(%rip),%rdi
  mov 0x18(%rdi),%r11
  test %r11,%r11
  jne 1f
  push %r10
  push %r9
  call irecv                  # the slow path: clobbers r11, r10, r9
  pop %r9
  pop %r10
  mov %rax,%r11
1:
  movl $0x2,0xa8(%r11)        # a constant
  movq $0x0,0x58(%r11)
  mov %r9,0x98(%r11)          # comm, twice
  mov %r15d,0x1d8(%r11)       # src
  mov %r10d,0x1dc(%r11)       # tag
  mov %r9,0xb0(%r11)
  mov %r14,0x1c8(%r11)        # buf
  mov %r11,(%rbx)             # through the req argument: not the object
  mov %r15d,0x8(%r9)          # through the comm argument: not the object
  mov %r15d,0x10(%rsp)        # the frame: not the object
  mov %r15b,0x64(%r11)        # a byte of an argument: not followed
  test %r15d,%r15d
  je 2f
  mov %edx,%r15d              # src is no longer in r15 on this path
2:
  mov %r15d,0x1e0(%r11)       # src on one path only: not counted
  pop %rbx
  pop %r14
  pop %r15
  ret
# isend(buf, count, type, dst, tag, mode, comm, **req): dst and tag spilled
# to the frame and reloaded, comm the first stack argument.
.globl isend
isend:
  push %r12
  sub $0x20,%rsp
  mov %ecx,0xc(%rsp)
  mov %r8d,0x8(%rsp)
  mov 0x30(%rsp),%rax         # comm
  mov %rax,0x10(%rsp)
  call isend
  mov %rax,%r12
  mov 0xc(%rsp),%ecx
  mov %ecx,0x1d8(%r12)
  mov 0x8(%rsp),%ecx
  mov %ecx,0x1dc(%r12)
  mov 0x10(%rsp),%rax
  mov %rax,0x98(%r12)
  mov %rax,0xb0(%r12)
  movl $0x2,0x60(%r12)
  add $0x20,%rsp
  pop %r12
  ret
.globl requests_end
requests_end:
.data
glob: .quad 0
