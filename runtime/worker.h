/* SPDX-License-Identifier: MIT */
/* A worker thread's loop (worker.c). */
#ifndef WEFT_WORKER_H
#define WEFT_WORKER_H

/* A worker thread's body (weft_init starts one per worker). */
void weft__worker_main(void *worker);

#endif
