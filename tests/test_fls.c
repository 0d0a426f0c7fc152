/* SPDX-License-Identifier: MIT */
/* Fiber-local storage: keys, get and set, the three inheritance modes
 * (empty, shared, copy-on-write), destructors run once by the last holder
 * (a parent ending before its child included), destructors that block at
 * exit, plain threads, concurrent sharers, and key exhaustion (last). */
#include <string.h>

#include "testutil.h"

#define MS 1000000LL

/* A value whose destructor counts. */
struct val {
	_Atomic int destroyed;
	int tag;
};

static void count_dtor(void *p)
{
	struct val *v = p;
	atomic_fetch_add(&v->destroyed, 1);
}

static weft_fls_key_t k_plain, k_dtor, k_other;

static int keys_setup(void **state)
{
	if (wt_start(state))
		return -1;
	if (weft_fls_key_create(&k_plain, NULL) || weft_fls_key_create(&k_dtor, count_dtor) ||
	    weft_fls_key_create(&k_other, count_dtor))
		return -1;
	return 0;
}

static weft_fiber_t spawn_mode(unsigned mode, weft_fn fn, void *arg)
{
	weft_attr_t a = {.fls = mode};
	weft_fiber_t f = 0;
	int r = weft_fiber_spawn(&f, &a, fn, arg);
	return r ? 0 : f;
}

/* In a fiber: join f, or count the failure for the test's own thread to
 * report (CMocka's asserts work only there), returning a pointer no fiber
 * here returns. */
static _Atomic int fiber_errors;
static int join_failed_mark;

static void *fiber_join(weft_fiber_t f)
{
	void *r = NULL;
	if (!f || weft_fiber_join(f, wt_ms(30000), &r, NULL) != 0) {
		atomic_fetch_add(&fiber_errors, 1);
		return &join_failed_mark;
	}
	return r;
}

/* wt_run_fiber, then what its fibers counted. */
static void *run_fiber(weft_fn fn, void *arg)
{
	atomic_store(&fiber_errors, 0);
	void *r = wt_run_fiber(fn, arg);
	assert_int_equal(atomic_load(&fiber_errors), 0);
	return r;
}

/* ---- Keys, get, set ------------------------------------------------------ */

static void test_key_create_bad(void **state)
{
	(void)state;
	assert_int_equal(weft_fls_key_create(NULL, NULL), -EINVAL);
	assert_true(k_plain != 0 && k_dtor != 0 && k_other != 0);
	assert_true(k_plain != k_dtor && k_dtor != k_other && k_plain != k_other);
}

struct basic {
	void *unset, *after_set, *after_clear, *bad_get;
	int r_set, r_clear, r_key0, r_key_unmade, r_same;
};

static void *basic_fn(void *arg)
{
	struct basic *b = arg;
	int x;
	b->unset = weft_fls_get(k_plain);
	b->r_set = weft_fls_set(k_plain, &x);
	b->r_same = weft_fls_set(k_plain, &x);
	b->after_set = weft_fls_get(k_plain);
	b->r_clear = weft_fls_set(k_plain, NULL);
	b->after_clear = weft_fls_get(k_plain);
	b->r_key0 = weft_fls_set(0, &x);
	b->r_key_unmade = weft_fls_set(WEFT_FLS_KEYS, &x);
	b->bad_get = weft_fls_get(0);
	if (!b->bad_get)
		b->bad_get = weft_fls_get(WEFT_FLS_KEYS + 1);
	return b->after_set == &x ? b : NULL;
}

static void test_get_set_clear(void **state)
{
	(void)state;
	struct basic b = {0};
	assert_ptr_equal(run_fiber(basic_fn, &b), &b);
	assert_null(b.unset);
	assert_int_equal(b.r_set, 0);
	assert_int_equal(b.r_same, 0);
	assert_int_equal(b.r_clear, 0);
	assert_null(b.after_clear);
	assert_int_equal(b.r_key0, -EINVAL);
	assert_int_equal(b.r_key_unmade, -EINVAL);
	assert_null(b.bad_get);
}

static void test_plain_thread(void **state)
{
	(void)state;
	int x;
	assert_int_equal(weft_fls_set(k_plain, &x), -EPERM);
	assert_null(weft_fls_get(k_plain));
	assert_int_equal(weft_fls_set(0, &x), -EINVAL);
}

static void *get_plain(void *arg)
{
	(void)arg;
	return weft_fls_get(k_plain);
}

static void test_spawn_from_thread_starts_empty(void **state)
{
	(void)state;
	for (unsigned mode = WEFT_FLS_EMPTY; mode <= WEFT_FLS_COPY; mode++) {
		weft_fiber_t f = spawn_mode(mode, get_plain, NULL);
		assert_true(f != 0);
		assert_null(wt_join(f));
	}
}

static void test_bad_mode(void **state)
{
	(void)state;
	weft_attr_t a = {.fls = WEFT_FLS_COPY + 1};
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, &a, get_plain, NULL), -EINVAL);
}

/* ---- Inheritance -------------------------------------------------------- */

static void *empty_parent(void *arg)
{
	(void)arg;
	int x;
	weft_fls_set(k_plain, &x);
	return fiber_join(spawn_mode(WEFT_FLS_EMPTY, get_plain, NULL)) == NULL ? (void *)1 : NULL;
}

static void test_empty_is_default(void **state)
{
	(void)state;
	assert_ptr_equal(run_fiber(empty_parent, NULL), (void *)1);
	/* attr NULL too */
	weft_fiber_t f;
	assert_int_equal(weft_fiber_spawn(&f, NULL, get_plain, NULL), 0);
	assert_null(wt_join(f));
}

struct share {
	int a, b, c;
	weft_future_t *child_set, *parent_set;
	void *child_saw_a, *child_saw_c, *parent_saw_b;
	int sets_ok;
};

static void *share_child(void *arg)
{
	struct share *s = arg;
	s->child_saw_a = weft_fls_get(k_plain);
	s->sets_ok += weft_fls_set(k_plain, &s->b) == 0;
	weft_future_resolve(s->child_set, NULL);
	weft_future_await(s->parent_set, wt_ms(30000), NULL);
	s->child_saw_c = weft_fls_get(k_plain);
	return NULL;
}

static void *share_parent(void *arg)
{
	struct share *s = arg;
	s->sets_ok += weft_fls_set(k_plain, &s->a) == 0;
	weft_fiber_t c = spawn_mode(WEFT_FLS_SHARE, share_child, s);
	weft_future_await(s->child_set, wt_ms(30000), NULL);
	s->parent_saw_b = weft_fls_get(k_plain);
	s->sets_ok += weft_fls_set(k_plain, &s->c) == 0;
	weft_future_resolve(s->parent_set, NULL);
	fiber_join(c);
	return NULL;
}

static void test_share_sees_both_ways(void **state)
{
	(void)state;
	struct share s = {0};
	assert_int_equal(weft_future_create(&s.child_set), 0);
	assert_int_equal(weft_future_create(&s.parent_set), 0);
	run_fiber(share_parent, &s);
	assert_int_equal(s.sets_ok, 3);
	assert_ptr_equal(s.child_saw_a, &s.a);
	assert_ptr_equal(s.parent_saw_b, &s.b);
	assert_ptr_equal(s.child_saw_c, &s.c);
	weft_future_release(s.child_set);
	weft_future_release(s.parent_set);
}

static void *share_child_sets(void *arg) { return (void *)(intptr_t)weft_fls_set(k_plain, arg); }

/* A parent with no table yet shares one with its child. */
static void *share_parent_no_table(void *arg)
{
	weft_fiber_t c = spawn_mode(WEFT_FLS_SHARE, share_child_sets, arg);
	if (fiber_join(c) != NULL)
		return NULL;
	return weft_fls_get(k_plain);
}

static void test_share_parent_without_table(void **state)
{
	(void)state;
	int x;
	assert_ptr_equal(run_fiber(share_parent_no_table, &x), &x);
}

struct copy {
	int a, b, c, d;
	weft_future_t *child_set, *parent_set;
	void *child_saw_a, *child_saw_own, *child_saw_after, *parent_saw_after, *grand_saw;
};

static void *copy_grandchild(void *arg)
{
	(void)arg;
	return weft_fls_get(k_plain);
}

static void *copy_child(void *arg)
{
	struct copy *s = arg;
	s->child_saw_a = weft_fls_get(k_plain);
	weft_fls_set(k_plain, &s->b);
	s->child_saw_own = weft_fls_get(k_plain);
	weft_future_resolve(s->child_set, NULL);
	weft_future_await(s->parent_set, wt_ms(30000), NULL);
	s->child_saw_after = weft_fls_get(k_plain);
	/* A copy of a copy sees the child's value. */
	s->grand_saw = fiber_join(spawn_mode(WEFT_FLS_COPY, copy_grandchild, NULL));
	return NULL;
}

static void *copy_parent(void *arg)
{
	struct copy *s = arg;
	weft_fls_set(k_plain, &s->a);
	weft_fiber_t c = spawn_mode(WEFT_FLS_COPY, copy_child, s);
	weft_future_await(s->child_set, wt_ms(30000), NULL);
	s->parent_saw_after = weft_fls_get(k_plain);
	weft_fls_set(k_plain, &s->c);
	weft_future_resolve(s->parent_set, NULL);
	fiber_join(c);
	return weft_fls_get(k_plain);
}

static void test_copy_is_a_snapshot(void **state)
{
	(void)state;
	struct copy s = {0};
	assert_int_equal(weft_future_create(&s.child_set), 0);
	assert_int_equal(weft_future_create(&s.parent_set), 0);
	assert_ptr_equal(run_fiber(copy_parent, &s), &s.c);
	assert_ptr_equal(s.child_saw_a, &s.a);
	assert_ptr_equal(s.child_saw_own, &s.b);
	assert_ptr_equal(s.parent_saw_after, &s.a); /* the child's set stays its own */
	assert_ptr_equal(s.child_saw_after, &s.b);  /* the parent's later set too */
	assert_ptr_equal(s.grand_saw, &s.b);
	weft_future_release(s.child_set);
	weft_future_release(s.parent_set);
}

static void *get_after(void *arg)
{
	weft_future_await(arg, wt_ms(30000), NULL);
	return weft_fls_get(k_plain);
}

/* The parent sets after spawning a copy from an empty table. */
static void *copy_empty_parent(void *arg)
{
	weft_future_t *go = arg;
	weft_fiber_t c = spawn_mode(WEFT_FLS_COPY, get_after, go);
	int x;
	weft_fls_set(k_plain, &x);
	weft_future_resolve(go, NULL);
	return c && fiber_join(c) == NULL ? (void *)1 : NULL;
}

static void test_copy_of_empty_stays_empty(void **state)
{
	(void)state;
	weft_future_t *go;
	assert_int_equal(weft_future_create(&go), 0);
	assert_ptr_equal(run_fiber(copy_empty_parent, go), (void *)1);
	weft_future_release(go);
}

/* ---- Destructors --------------------------------------------------------- */

struct dt {
	struct val a, b;
	int r1, r2, r3, r4;
	int a_after_replace, b_after_same, b_after_clear;
};

static void *replace_fn(void *arg)
{
	struct dt *d = arg;
	d->r1 = weft_fls_set(k_dtor, &d->a);
	d->r2 = weft_fls_set(k_dtor, &d->b);
	d->a_after_replace = atomic_load(&d->a.destroyed);
	d->r3 = weft_fls_set(k_dtor, &d->b);
	d->b_after_same = atomic_load(&d->b.destroyed);
	d->r4 = weft_fls_set(k_dtor, NULL);
	d->b_after_clear = atomic_load(&d->b.destroyed);
	return NULL;
}

static void test_dtor_on_replace_and_clear(void **state)
{
	(void)state;
	struct dt d = {0};
	run_fiber(replace_fn, &d);
	assert_int_equal(d.r1 | d.r2 | d.r3 | d.r4, 0);
	assert_int_equal(d.a_after_replace, 1);
	assert_int_equal(d.b_after_same, 0);
	assert_int_equal(d.b_after_clear, 1);
	assert_int_equal(atomic_load(&d.a.destroyed), 1);
	assert_int_equal(atomic_load(&d.b.destroyed), 1);
}

static void *set_and_return(void *arg)
{
	struct dt *d = arg;
	weft_fls_set(k_dtor, &d->a);
	weft_fls_set(k_other, &d->b);
	weft_fls_set(k_plain, d); /* no destructor */
	return NULL;
}

static void test_dtor_at_exit_before_join(void **state)
{
	(void)state;
	struct dt d = {0};
	run_fiber(set_and_return, &d);
	/* join returns after the fiber's destructors. */
	assert_int_equal(atomic_load(&d.a.destroyed), 1);
	assert_int_equal(atomic_load(&d.b.destroyed), 1);
}

static void *exit_with_value(void *arg)
{
	struct dt *d = arg;
	weft_fls_set(k_dtor, &d->a);
	weft_fiber_exit(d);
	return NULL;
}

static void *fail_with_value(void *arg)
{
	struct dt *d = arg;
	weft_fls_set(k_dtor, &d->b);
	weft_fiber_set_status(-EIO);
	weft_fiber_exit(NULL);
	return NULL;
}

static void test_dtor_on_exit_and_fail(void **state)
{
	(void)state;
	struct dt d = {0};
	assert_ptr_equal(run_fiber(exit_with_value, &d), &d);
	assert_null(run_fiber(fail_with_value, &d));
	assert_int_equal(atomic_load(&d.a.destroyed), 1);
	assert_int_equal(atomic_load(&d.b.destroyed), 1);
}

/* A parent that shares its table and ends first: the value lives on for
 * the child, and is destroyed once, when the child ends. */
struct outlive {
	unsigned mode;
	struct val a;
	weft_future_t *go;
	weft_fiber_t child;
	void *child_saw;
	int destroyed_when_child_looked;
};

static void *outlive_child(void *arg)
{
	struct outlive *o = arg;
	weft_future_await(o->go, wt_ms(30000), NULL);
	o->child_saw = weft_fls_get(k_dtor);
	o->destroyed_when_child_looked = atomic_load(&o->a.destroyed);
	return NULL;
}

static void *outlive_parent(void *arg)
{
	struct outlive *o = arg;
	weft_fls_set(k_dtor, &o->a);
	o->child = spawn_mode(o->mode, outlive_child, o);
	return NULL;
}

static void outlive_case(unsigned mode)
{
	struct outlive o = {.mode = mode};
	assert_int_equal(weft_future_create(&o.go), 0);
	run_fiber(outlive_parent, &o);
	assert_true(o.child != 0);
	assert_int_equal(atomic_load(&o.a.destroyed), 0);
	weft_future_resolve(o.go, NULL);
	wt_join(o.child);
	assert_ptr_equal(o.child_saw, &o.a);
	assert_int_equal(o.destroyed_when_child_looked, 0);
	assert_int_equal(atomic_load(&o.a.destroyed), 1);
	weft_future_release(o.go);
}

static void test_dtor_share_parent_ends_first(void **state)
{
	(void)state;
	outlive_case(WEFT_FLS_SHARE);
}

static void test_dtor_copy_parent_ends_first(void **state)
{
	(void)state;
	outlive_case(WEFT_FLS_COPY);
}

/* A copy whose child writes another key holds the same value in two
 * arrays: still destroyed once, by the last. And a value the child
 * replaces is not destroyed while the parent holds it. */
struct twice {
	struct val a, b, c;
	weft_future_t *child_done, *parent_go;
	int a_after_child_replaced;
};

static void *twice_child(void *arg)
{
	struct twice *t = arg;
	weft_fls_set(k_other, &t->c);
	weft_fls_set(k_dtor, &t->b); /* replaces its view of a */
	t->a_after_child_replaced = atomic_load(&t->a.destroyed);
	return NULL;
}

static void *twice_parent(void *arg)
{
	struct twice *t = arg;
	weft_fls_set(k_dtor, &t->a);
	fiber_join(spawn_mode(WEFT_FLS_COPY, twice_child, t));
	return NULL;
}

static void test_dtor_copy_once_each(void **state)
{
	(void)state;
	struct twice t = {0};
	run_fiber(twice_parent, &t);
	assert_int_equal(t.a_after_child_replaced, 0);
	assert_int_equal(atomic_load(&t.a.destroyed), 1);
	assert_int_equal(atomic_load(&t.b.destroyed), 1);
	assert_int_equal(atomic_load(&t.c.destroyed), 1);
}

/* What a destructor run by a fiber's own exit sees and can do. */
static weft_fls_key_t k_probe;
struct probe {
	void *get;
	int set, exit, status, sleep;
	_Atomic int ran;
};
static struct probe probe;

static void probe_dtor(void *p)
{
	(void)p;
	probe.get = weft_fls_get(k_plain);
	probe.set = weft_fls_set(k_plain, &probe);
	probe.exit = weft_fiber_exit(NULL);
	probe.status = weft_fiber_set_status(-EIO);
	/* It may block, and a request the fiber never saw does not cut it
	 * short: the exit dropped it. */
	probe.sleep = weft_sleep_until(weft_deadline_in(MS));
	atomic_store(&probe.ran, 1);
}

static void *probe_fn(void *arg)
{
	_Atomic int *cancelled = arg;
	weft_fls_set(k_plain, &probe);
	weft_fls_set(k_probe, &probe);
	weft_fiber_cancel_hold();
	while (!atomic_load(cancelled))
		weft_fiber_yield();
	weft_fiber_cancel_release(); /* the request is pending: nothing blocks again */
	return NULL;
}

static void test_dtor_in_exit(void **state)
{
	(void)state;
	assert_int_equal(weft_fls_key_create(&k_probe, probe_dtor), 0);
	memset(&probe, 0, sizeof probe);
	probe.sleep = 1;
	_Atomic int cancelled = 0;
	weft_fiber_t f = wt_spawn(probe_fn, &cancelled);
	assert_int_equal(weft_fiber_cancel(f), 0);
	atomic_store(&cancelled, 1);
	int status = 1;
	assert_int_equal(weft_fiber_join(f, wt_ms(30000), NULL, &status), 0);
	assert_int_equal(status, -ECANCELED);
	assert_int_equal(atomic_load(&probe.ran), 1);
	assert_null(probe.get);
	assert_int_equal(probe.set, -EPERM);
	assert_int_equal(probe.exit, -EALREADY);
	assert_int_equal(probe.status, -EALREADY);
	assert_int_equal(probe.sleep, 0);
}

/* Sharers setting and reading their own keys at once, on every worker. */
#define SHARERS 6
#define ROUNDS 2000
static weft_fls_key_t k_mine[SHARERS];

struct sharer {
	int i;
	int slots[4];
	int bad;
};

static void *sharer_fn(void *arg)
{
	struct sharer *s = arg;
	for (int r = 0; r < ROUNDS; r++) {
		void *want = &s->slots[r % 4];
		if (weft_fls_set(k_mine[s->i], want) || weft_fls_get(k_mine[s->i]) != want)
			s->bad++;
		if (r % 64 == 0)
			weft_fiber_yield();
	}
	return NULL;
}

static void *sharers_root(void *arg)
{
	struct sharer *s = arg;
	weft_fiber_t f[SHARERS];
	for (int i = 0; i < SHARERS; i++)
		f[i] = spawn_mode(i % 2 ? WEFT_FLS_SHARE : WEFT_FLS_COPY, sharer_fn, &s[i]);
	for (int i = 0; i < SHARERS; i++)
		fiber_join(f[i]);
	/* The shared ones' last values are in this table. */
	int seen = 0;
	for (int i = 1; i < SHARERS; i += 2)
		seen += weft_fls_get(k_mine[i]) == &s[i].slots[(ROUNDS - 1) % 4];
	for (int i = 0; i < SHARERS; i += 2)
		seen += weft_fls_get(k_mine[i]) == NULL;
	return (void *)(intptr_t)seen;
}

static void test_concurrent_sharers(void **state)
{
	(void)state;
	struct sharer s[SHARERS];
	memset(s, 0, sizeof s);
	for (int i = 0; i < SHARERS; i++) {
		s[i].i = i;
		assert_int_equal(weft_fls_key_create(&k_mine[i], NULL), 0);
	}
	assert_ptr_equal(run_fiber(sharers_root, s), (void *)(intptr_t)SHARERS);
	for (int i = 0; i < SHARERS; i++)
		assert_int_equal(s[i].bad, 0);
}

/* Last: it uses up the process's keys. */
static void test_keys_run_out(void **state)
{
	(void)state;
	weft_fls_key_t k, prev = 0;
	int made = 0;
	while (weft_fls_key_create(&k, NULL) == 0) {
		assert_true(k > prev && k <= WEFT_FLS_KEYS);
		prev = k;
		made++;
	}
	assert_int_equal(weft_fls_key_create(&k, NULL), -EAGAIN);
	assert_int_equal(prev, WEFT_FLS_KEYS);
	assert_true(made > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_create_bad),
		cmocka_unit_test(test_get_set_clear),
		cmocka_unit_test(test_plain_thread),
		cmocka_unit_test(test_spawn_from_thread_starts_empty),
		cmocka_unit_test(test_bad_mode),
		cmocka_unit_test(test_empty_is_default),
		cmocka_unit_test(test_share_sees_both_ways),
		cmocka_unit_test(test_share_parent_without_table),
		cmocka_unit_test(test_copy_is_a_snapshot),
		cmocka_unit_test(test_copy_of_empty_stays_empty),
		cmocka_unit_test(test_dtor_on_replace_and_clear),
		cmocka_unit_test(test_dtor_at_exit_before_join),
		cmocka_unit_test(test_dtor_on_exit_and_fail),
		cmocka_unit_test(test_dtor_share_parent_ends_first),
		cmocka_unit_test(test_dtor_copy_parent_ends_first),
		cmocka_unit_test(test_dtor_copy_once_each),
		cmocka_unit_test(test_dtor_in_exit),
		cmocka_unit_test(test_concurrent_sharers),
		cmocka_unit_test(test_keys_run_out),
	};
	return WT_MAIN("fls", tests, keys_setup, wt_stop);
}
