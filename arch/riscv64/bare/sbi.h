/* SPDX-License-Identifier: MIT */
/* Calls into the Supervisor Binary Interface (OpenSBI below an S-mode
 * payload), by the RISC-V SBI specification: the extension in a7, the
 * function in a6, arguments in a0..a2; a0 returns an error (0, or a
 * negative SBI_ERR_*), a1 a value. */
#ifndef WEFT_SBI_H
#define WEFT_SBI_H

struct sbiret {
	long error, value;
};

static inline struct sbiret sbi_call(long eid, long fid, long a0, long a1, long a2)
{
	register long r0 __asm__("a0") = a0;
	register long r1 __asm__("a1") = a1;
	register long r2 __asm__("a2") = a2;
	register long r6 __asm__("a6") = fid;
	register long r7 __asm__("a7") = eid;
	__asm__ volatile("ecall" : "+r"(r0), "+r"(r1) : "r"(r2), "r"(r6), "r"(r7) : "memory");
	return (struct sbiret){r0, r1};
}

#define SBI_EXT_BASE 0x10
#define SBI_EXT_TIME 0x54494D45
#define SBI_EXT_SRST 0x53525354

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

#endif
