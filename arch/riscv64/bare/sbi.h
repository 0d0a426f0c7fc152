/* SPDX-License-Identifier: MIT */
/* Calls into the Supervisor Binary Interface (OpenSBI below an S-mode
 * payload), by the RISC-V SBI specification: the extension in a7, the
 * function in a6, arguments in a0..a3; a0 returns an error (0, or a
 * negative SBI_ERR_*), a1 a value. */
#ifndef WEFT_SBI_H
#define WEFT_SBI_H

struct sbiret {
	long error, value;
};

static inline struct sbiret sbi_call4(long eid, long fid, long a0, long a1, long a2, long a3)
{
	register long r0 __asm__("a0") = a0;
	register long r1 __asm__("a1") = a1;
	register long r2 __asm__("a2") = a2;
	register long r3 __asm__("a3") = a3;
	register long r6 __asm__("a6") = fid;
	register long r7 __asm__("a7") = eid;
	__asm__ volatile("ecall"
			 : "+r"(r0), "+r"(r1)
			 : "r"(r2), "r"(r3), "r"(r6), "r"(r7)
			 : "memory");
	return (struct sbiret){r0, r1};
}

static inline struct sbiret sbi_call(long eid, long fid, long a0, long a1, long a2)
{
	return sbi_call4(eid, fid, a0, a1, a2, 0);
}

#define SBI_EXT_BASE 0x10
#define SBI_EXT_TIME 0x54494D45
#define SBI_EXT_SRST 0x53525354
#define SBI_EXT_HSM 0x48534D
#define SBI_EXT_IPI 0x735049
#define SBI_EXT_RFENCE 0x52464E43

/* The base extension (every SBI since 0.2 has it; an SBI 0.1 answers
 * SBI_ERR_NOT_SUPPORTED): the specification's version (major in bits
 * 30:24, minor in 23:0), the implementation's id (1: OpenSBI, whose
 * version is major << 16 | minor) and version, and the hart's mvendorid. */
#define SBI_BASE_SPEC_VERSION 0
#define SBI_BASE_IMPL_ID 1
#define SBI_BASE_IMPL_VERSION 2
#define SBI_BASE_MVENDORID 4
#define SBI_IMPL_OPENSBI 1
static inline struct sbiret sbi_base(long fid) { return sbi_call(SBI_EXT_BASE, fid, 0, 0, 0); }

#define SBI_SRST_SHUTDOWN 0
#define SBI_SRST_REASON_NONE 0
#define SBI_SRST_REASON_FAILURE 1

/* System reset (the SRST extension): returns only if the firmware cannot
 * (SBI_ERR_NOT_SUPPORTED where it has no reset device, as the Duo's
 * OpenSBI), with its error. */
static inline long sbi_system_reset(long type, long reason)
{
	return sbi_call(SBI_EXT_SRST, 0, type, reason, 0).error;
}

/* Start hart hartid (the HSM extension) at start in S-mode, translation
 * off, interrupts off, with a0 = hartid and a1 = opaque. 0, or the SBI's
 * error (SBI_ERR_INVALID_PARAM: no such hart; SBI_ERR_ALREADY_AVAILABLE:
 * it runs already). */
static inline long sbi_hart_start(unsigned long hartid, void (*start)(void), void *opaque)
{
	return sbi_call(SBI_EXT_HSM, 0, (long)hartid, (long)start, (long)opaque).error;
}

/* Hart hartid's HSM state (value: 0 started, 1 stopped, 2 start pending,
 * ...), or the SBI's error (SBI_ERR_INVALID_PARAM: no such hart). */
static inline struct sbiret sbi_hart_status(unsigned long hartid)
{
	return sbi_call(SBI_EXT_HSM, 2, (long)hartid, 0, 0);
}
#define SBI_HSM_STARTED 0
#define SBI_HSM_STOPPED 1
#define SBI_HSM_START_PENDING 2
#define SBI_HSM_STOP_PENDING 3

/* A supervisor software interrupt (sip.SSIP) to every hart whose bit is
 * set in mask, bit 0 being hart base (the IPI extension). */
static inline long sbi_send_ipi(unsigned long mask, unsigned long base)
{
	return sbi_call(SBI_EXT_IPI, 0, (long)mask, (long)base, 0).error;
}

/* sfence.vma for [start, start + size) on the harts of mask (bit 0 is
 * hart base), done when it returns (the RFENCE extension). */
static inline long sbi_remote_sfence_vma(unsigned long mask, unsigned long base,
					 unsigned long start, unsigned long size)
{
	return sbi_call4(SBI_EXT_RFENCE, 1, (long)mask, (long)base, (long)start, (long)size).error;
}

#endif
