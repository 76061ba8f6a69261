// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fake_cubin.c - source of $(BUILD)/tests/gpu/apps/fake.cubin (tests only).
 *
 * Owns: the "cubin" gpu_app loads with cuModuleLoadData. It is compiled,
 * not linked (an ELF relocatable object): what matters is its symbol table,
 * which holds the kernels' mangled names as FUNC symbols with fixed sizes,
 * each in its own .text.<name> section at offset 0 as in a real cubin. The
 * mock driver resolves cuModuleGetFunction against these symbols (symbol
 * index = CUPTI functionIndex) and PC samples fall at offsets 0x0, 0x10, ...
 * inside them.
 *
 *   _Z6matmulPKfS0_Pfi   matmul(const float*, const float*, float*, int)  0x200 bytes
 *   _Z4reluPfi           relu(float*, int)                                 0x80
 *   _Z7softmaxPfi        softmax(float*, int)                              0x100
 *   _Z9layernormPfi      layernorm(float*, int)                            0x100
 *   _Z4tinyv             tiny()                                            0x40
 */
#define FAKE_KERNEL(sym, size)						\
	__asm__(".section .text." #sym ",\"ax\",@progbits\n"		\
		".globl " #sym "\n"					\
		".type " #sym ", @function\n"				\
		".p2align 7\n"						\
		#sym ":\n"						\
		".fill " #size ", 1, 0\n"				\
		".size " #sym ", " #size "\n"				\
		".previous\n")

FAKE_KERNEL(_Z6matmulPKfS0_Pfi, 0x200);
FAKE_KERNEL(_Z4reluPfi, 0x80);
FAKE_KERNEL(_Z7softmaxPfi, 0x100);
FAKE_KERNEL(_Z9layernormPfi, 0x100);
FAKE_KERNEL(_Z4tinyv, 0x40);

/* A data object, which cuModuleGetFunction must not find. */
const int fake_cubin_version = 1;
