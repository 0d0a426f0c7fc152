// SPDX-License-Identifier: MIT
// The Go anchors of `make bench` (mk/bench.sh), written for it with the
// standard library only: the same loops as weft's side (bench/micro.c,
// examples/echo.c, examples/httpd.c), printing "bench: NAME VALUE UNIT".
// GOMAXPROCS comes from the environment (the harness sets it per row).
//
// Usage:
//
//	gobench spawn N         go f() + WaitGroup in batches of 1,000: ns per goroutine
//	gobench chan N          N round trips over two unbuffered channels: ns each
//	gobench yield G Y       G goroutines x Y runtime.Gosched(): ns per yield
//	gobench ring R H        a token around a ring of R goroutines over unbuffered
//	                        channels, H hops (whole laps of R): ns per hop
//	gobench tree D          a binary tree of goroutines of depth D, each starting
//	                        its two children and waiting for them: ns per goroutine
//	gobench fib N D Y       N goroutines x (fib(D) + Y Gosched): wall ms, peak RSS MB
//	gobench idle N          N goroutines blocked on one channel: RSS bytes each
//	gobench echo ADDR       an echo server, a goroutine per connection
//	gobench http ADDR FILE  net/http serving FILE's bytes at /
package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func arg(i int, def int) int {
	if len(os.Args) > i {
		v, err := strconv.Atoi(os.Args[i])
		if err != nil {
			fmt.Fprintf(os.Stderr, "gobench: %s: not a number\n", os.Args[i])
			os.Exit(2)
		}
		return v
	}
	return def
}

// procBytes reads VmRSS or VmHWM from /proc/self/status.
func procBytes(key string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, key+":") {
			fields := strings.Fields(line[len(key)+1:])
			if len(fields) > 0 {
				kb, _ := strconv.ParseInt(fields[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

var sink int64

func spawn(n int) {
	const batch = 1000
	var wg sync.WaitGroup
	t0 := time.Now()
	for done := 0; done < n; done += batch {
		b := batch
		if n-done < b {
			b = n - done
		}
		wg.Add(b)
		for i := 0; i < b; i++ {
			go func() {
				atomic.AddInt64(&sink, 1)
				wg.Done()
			}()
		}
		wg.Wait()
	}
	ns := float64(time.Since(t0).Nanoseconds()) / float64(n)
	fmt.Printf("bench: spawn %.3f ns\n", ns)
}

func chanRoundTrip(n int) {
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v
		}
	}()
	t0 := time.Now()
	for i := 0; i < n; i++ {
		ping <- i
		if <-pong != i {
			panic("round trip")
		}
	}
	ns := float64(time.Since(t0).Nanoseconds()) / float64(n)
	close(ping)
	fmt.Printf("bench: chan %.3f ns\n", ns)
}

func yield(g, y int) {
	var wg sync.WaitGroup
	t0 := time.Now()
	wg.Add(g)
	for i := 0; i < g; i++ {
		go func() {
			for j := 0; j < y; j++ {
				runtime.Gosched()
			}
			wg.Done()
		}()
	}
	wg.Wait()
	ns := float64(time.Since(t0).Nanoseconds()) / float64(g*y)
	fmt.Printf("bench: yield %.3f ns\n", ns)
}

// ring: goroutine i receives on chs[i] and sends to chs[i+1] (mod r); the
// timing goroutine is member 0. Closing chs[1] ends the members one by one.
func ring(r, h int) {
	if r < 2 {
		fmt.Fprintln(os.Stderr, "gobench: ring: R below 2")
		os.Exit(2)
	}
	laps := h / r
	if laps < 1 {
		laps = 1
	}
	chs := make([]chan int, r)
	for i := range chs {
		chs[i] = make(chan int)
	}
	for i := 1; i < r; i++ {
		go func(in, out chan int) {
			for v := range in {
				out <- v + 1
			}
			close(out)
		}(chs[i], chs[(i+1)%r])
	}
	t0 := time.Now()
	for lap := 0; lap < laps; lap++ {
		chs[1] <- 0
		if <-chs[0] != r-1 {
			panic("ring lap")
		}
	}
	ns := float64(time.Since(t0).Nanoseconds()) / float64(laps*r)
	close(chs[1])
	for range chs[0] {
	}
	fmt.Printf("bench: ring %.3f ns hops=%d\n", ns, laps*r)
}

// treeNode returns the number of goroutines in its subtree, itself included.
func treeNode(d int) int {
	if d == 0 {
		return 1
	}
	var wg sync.WaitGroup
	var a, b int
	wg.Add(2)
	go func() {
		a = treeNode(d - 1)
		wg.Done()
	}()
	go func() {
		b = treeNode(d - 1)
		wg.Done()
	}()
	wg.Wait()
	return 1 + a + b
}

func tree(d int) {
	if d < 0 || d > 30 {
		fmt.Fprintln(os.Stderr, "gobench: tree: D out of [0, 30]")
		os.Exit(2)
	}
	var wg sync.WaitGroup
	var count int
	t0 := time.Now()
	wg.Add(1)
	go func() {
		count = treeNode(d)
		wg.Done()
	}()
	wg.Wait()
	ns := float64(time.Since(t0).Nanoseconds()) / float64(count)
	if count != 2<<d-1 {
		panic("tree: wrong count")
	}
	fmt.Printf("bench: tree %.3f ns fibers=%d\n", ns, count)
}

func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

func fibRow(n, d, y int) {
	var wg sync.WaitGroup
	var sum int64
	t0 := time.Now()
	wg.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			atomic.AddInt64(&sum, int64(fib(d)))
			for j := 0; j < y; j++ {
				runtime.Gosched()
			}
			wg.Done()
		}()
	}
	wg.Wait()
	ms := float64(time.Since(t0).Nanoseconds()) / 1e6
	if sum != int64(n)*int64(fib(d)) {
		panic("fib: wrong sum")
	}
	fmt.Printf("bench: fib_ms %.3f ms\n", ms)
	fmt.Printf("bench: fib_rss %.3f MB\n", float64(procBytes("VmHWM"))/1048576.0)
}

func idle(n int) {
	gate := make(chan struct{})
	var parked int64
	var wg sync.WaitGroup
	runtime.GC()
	time.Sleep(10 * time.Millisecond)
	rss0 := procBytes("VmRSS")
	wg.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			atomic.AddInt64(&parked, 1)
			<-gate
			wg.Done()
		}()
	}
	for atomic.LoadInt64(&parked) < int64(n) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	rss1 := procBytes("VmRSS")
	close(gate)
	wg.Wait()
	fmt.Printf("bench: idle %.1f B\n", float64(rss1-rss0)/float64(n))
}

func echo(addr string) {
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gobench: echo:", err)
		os.Exit(1)
	}
	fmt.Printf("gobench: echo listening on %s\n", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go func(c net.Conn) {
			defer c.Close()
			buf := make([]byte, 4096)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					if _, werr := c.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}(c)
	}
}

func serveHTTP(addr, file string) {
	page, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gobench: http:", err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gobench: http:", err)
		os.Exit(1)
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})
	fmt.Printf("gobench: http listening on %s\n", ln.Addr())
	fmt.Fprintln(os.Stderr, http.Serve(ln, nil))
	os.Exit(1)
}

func main() {
	row := ""
	if len(os.Args) > 1 {
		row = os.Args[1]
	}
	switch row {
	case "spawn":
		spawn(arg(2, 10000))
	case "chan":
		chanRoundTrip(arg(2, 10000))
	case "yield":
		yield(arg(2, 10), arg(3, 100))
	case "ring":
		ring(arg(2, 100), arg(3, 10000))
	case "tree":
		tree(arg(2, 10))
	case "fib":
		fibRow(arg(2, 1000), arg(3, 15), arg(4, 10))
	case "idle":
		idle(arg(2, 1000))
	case "echo", "http":
		if len(os.Args) < 3 || (row == "http" && len(os.Args) < 4) {
			fmt.Fprintln(os.Stderr, "usage: gobench echo ADDR | http ADDR FILE")
			os.Exit(2)
		}
		if row == "echo" {
			echo(os.Args[2])
		} else {
			serveHTTP(os.Args[2], os.Args[3])
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: gobench spawn|chan|yield|ring|tree|fib|idle|echo|http ...")
		os.Exit(2)
	}
}
