/* SPDX-License-Identifier: MIT */
/* Names for code addresses, for the dump's and the stall report's frames.
 * dladdr(3) names only what a module exports, and a program's static
 * functions, libweft's hidden ones and everything of a static program are
 * not exported: it could say `httpd+0x129c6` and no more. So the module
 * that holds the address is found with dl_iterate_phdr (which also knows
 * a static program's own segments), and its file's symbol table (.symtab,
 * or .dynsym when stripped) is searched for the function around it. Each
 * module's file is mapped read-only once and kept. What has no symbol
 * (a stripped module, the vDSO) keeps dladdr's `module+offset`.
 * Not for a signal handler: it locks, opens and maps files (the dump runs
 * on a thread of its own, the stall report on the monitor's). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"

#define MODULES 32

struct module {
	char path[256]; /* "" for the program itself: /proc/self/exe */
	uintptr_t bias; /* what the loader added to the file's addresses */
	int tried;
	const ElfW(Sym) * syms;
	size_t nsyms;
	const char *strs;
	size_t strsz;
};

static struct module mods[MODULES];
static pthread_mutex_t mods_lock = PTHREAD_MUTEX_INITIALIZER;

struct find {
	uintptr_t pc;
	int found;
	const char *name;
	uintptr_t bias;
};

static int find_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct find *f = arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && f->pc >= lo && f->pc - lo < ph->p_memsz) {
			f->found = 1;
			/* The program itself: "" (glibc) or "/proc/self/exe" (a
			 * static musl program). */
			f->name = info->dlpi_name && strcmp(info->dlpi_name, "/proc/self/exe")
					  ? info->dlpi_name
					  : "";
			f->bias = info->dlpi_addr;
			return 1;
		}
	}
	return 0;
}

/* The file's symbol table, mapped: .symtab if it has one, else .dynsym. */
static void load(struct module *m)
{
	m->tried = 1;
	int fd = open(m->path[0] ? m->path : "/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	void *map = MAP_FAILED;
	if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(ElfW(Ehdr)))
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return;
	size_t len = (size_t)st.st_size;
	const unsigned char *b = map;
	const ElfW(Ehdr) *eh = map;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
	    eh->e_shoff > len || eh->e_shnum > (len - eh->e_shoff) / sizeof(ElfW(Shdr)))
		goto out;
	const ElfW(Shdr) *sh = (const void *)(b + eh->e_shoff);
	for (unsigned want = SHT_SYMTAB;; want = SHT_DYNSYM) {
		for (unsigned i = 0; i < eh->e_shnum; i++) {
			if (sh[i].sh_type != want || sh[i].sh_link >= eh->e_shnum)
				continue;
			const ElfW(Shdr) *str = &sh[sh[i].sh_link];
			if (sh[i].sh_offset > len || sh[i].sh_size > len - sh[i].sh_offset ||
			    str->sh_offset > len || str->sh_size > len - str->sh_offset)
				continue;
			m->syms = (const void *)(b + sh[i].sh_offset);
			m->nsyms = sh[i].sh_size / sizeof(ElfW(Sym));
			m->strs = (const char *)(b + str->sh_offset);
			m->strsz = str->sh_size;
			return; /* the mapping stays, for the module's lifetime */
		}
		if (want == SHT_DYNSYM)
			break;
	}
out:
	munmap(map, len);
}

/* The function holding pc in the module, and pc's offset in it: the
 * function whose size spans it, else (assembler code has no size) the
 * nearest one below it. */
static const char *lookup(const struct module *m, uintptr_t pc, uintptr_t *off)
{
	const char *near = NULL;
	uintptr_t addr = pc - m->bias, near_at = 0;
	for (size_t i = 0; i < m->nsyms; i++) {
		const ElfW(Sym) *s = &m->syms[i];
		if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF ||
		    s->st_name >= m->strsz || addr < s->st_value)
			continue;
		if (s->st_size && addr - s->st_value < s->st_size) {
			*off = addr - s->st_value;
			return m->strs + s->st_name;
		}
		if (!s->st_size && (!near || s->st_value > near_at)) {
			near = m->strs + s->st_name;
			near_at = s->st_value;
		}
	}
	*off = addr - near_at;
	return near;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

size_t shim_symbolize(uintptr_t pc, char *buf, size_t cap)
{
	if (cap == 0)
		return 0;
	int n = -1;
	struct find f = {.pc = pc};
	pthread_mutex_lock(&mods_lock);
	dl_iterate_phdr(find_module, &f);
	struct module *m = NULL;
	for (int i = 0; f.found && i < MODULES; i++) {
		if (mods[i].tried && mods[i].bias == f.bias && !strcmp(mods[i].path, f.name)) {
			m = &mods[i];
			break;
		}
		if (!mods[i].tried && strlen(f.name) < sizeof mods[i].path) {
			m = &mods[i];
			strcpy(m->path, f.name);
			m->bias = f.bias;
			load(m);
			break;
		}
	}
	uintptr_t off;
	const char *fn = m ? lookup(m, pc, &off) : NULL;
	if (fn) {
		char exe[256] = "";
		const char *mod = m->path;
		if (!mod[0]) {
			ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
			exe[k > 0 ? k : 0] = 0;
			mod = exe;
		}
		n = snprintf(buf, cap, "%s+0x%lx in %s", fn, (unsigned long)off, base_name(mod));
	}
	pthread_mutex_unlock(&mods_lock);
	if (n < 0) {
		Dl_info di;
		if (!dladdr((void *)pc, &di) || !di.dli_fname)
			return 0;
		if (di.dli_sname && di.dli_saddr)
			n = snprintf(buf, cap, "%s+0x%lx in %s", di.dli_sname,
				     (unsigned long)(pc - (uintptr_t)di.dli_saddr),
				     base_name(di.dli_fname));
		else
			n = snprintf(buf, cap, "%s+0x%lx", base_name(di.dli_fname),
				     (unsigned long)(pc - (uintptr_t)di.dli_fbase));
	}
	if (n < 0)
		return 0;
	return (size_t)n < cap ? (size_t)n : cap - 1;
}
