// Contender: client-go's own informer pipeline, in Go, the way client-go's examples/workqueue
// builds a controller (written for kinrun's benchmarks; built by build.sh against the client-go
// vendored in Debian's `kubernetes` source package, v1.20.2, GO111MODULE=off).
//
// Pipeline: clientset (rest.Config from the kubeconfig) -> cache.ListWatch over
// CoreV1().Pods(ns) -> cache.NewSharedIndexInformer (Reflector, DeltaFIFO, indexer with the
// namespace index, as the typed informer factories build it) -> event handlers that Add the
// object's key to a workqueue.NewRateLimitingQueue(DefaultControllerRateLimiter()) -> one
// worker: Get, indexer.GetByKey, record, Forget on success (AddRateLimited on error), Done.
// Workers start after cache.WaitForCacheSync, as in the example.
//
// The command line and the JSON result line are those of benchmarks/contenders/_common.py, so
// benchmarks/run.py drives this binary like the Python contenders (see that module for the
// workloads). Go-specific measures:
//   - cpu_s: CLOCK_PROCESS_CPUTIME_ID (every thread, user + system), as time.process_time;
//   - gc_max_pause / gc_total: the runtime's stop-the-world pauses (MemStats.PauseNs) during
//     the workload; Go's collector marks concurrently, so these are not comparable with CPython's
//     collections, which stop the interpreter for the whole collection;
//   - traced_bytes (with --tracemalloc): MemStats.HeapAlloc after runtime.GC() at the end minus
//     the same at the first request: live heap bytes, what tracemalloc counts for Python;
//     heap_inuse_bytes is HeapInuse (spans in use) likewise.
//
// Knobs for finding out what slows a client-go contender down (benchmarks/HISTORY.md, "client-go"):
//
//	--variant json|protobuf   the rest.Config content type (protobuf: as kube-controller-manager)
//	--qps Q --burst B         rest.Config QPS/Burst (default 1e6/1e6 as the kinrun contender;
//	                          0/0 leaves client-go's defaults of 5/10)
//	--get                     the worker GETs the object from the server (through the client's
//	                          rate limiter) instead of reading the informer's cache
//	--add-rate-limited        the handlers AddRateLimited instead of Add
//	--gomaxprocs N            runtime.GOMAXPROCS (default 1: one core, as the others)
//	--dynamic                 the dynamic client and unstructured objects (map[string]interface{},
//	                          decoded by encoding/json) instead of the typed clientset
//	--cpuprofile FILE         write a pprof CPU profile of the workload (go tool pprof -top)
//	--no-pin                  ignore --cpu: keep the affinity inherited from the harness
//	                          (its CPU 0, the embedded server's), as a Go program that does not
//	                          pin itself would
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/ioutil"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

const (
	stampAnnotation = "bench/stamp"
	finalAnnotation = "bench/final"
)

// Set by build.sh (-ldflags -X): the Debian source package version of the tree.
var treeVersion = "unknown"

var tImported = now()

func now() float64 { return float64(time.Now().UnixNano()) / 1e9 }

func cpuSeconds() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}

type options struct {
	workload, kubeconfig, namespace, since, marker, variant string
	cpuprofile                                              string
	n, cpu, limit, burst, gomaxprocs                        int
	timeout, tSpawn, qps                                    float64
	tracemalloc, get, addRateLimited, noPin, dynamic        bool
}

func parseArgs() *options {
	o := &options{}
	flag.StringVar(&o.workload, "workload", "", "events, sync or latency")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig path")
	flag.StringVar(&o.namespace, "namespace", "default", "namespace")
	flag.IntVar(&o.n, "n", 0, "objects to handle once (sync)")
	flag.StringVar(&o.since, "since", "", "resourceVersion to replay from (events)")
	flag.StringVar(&o.marker, "marker", "bench-marker", "name of the last object written")
	flag.IntVar(&o.cpu, "cpu", -1, "pin to this CPU (-1: no pinning)")
	flag.Float64Var(&o.tSpawn, "t-spawn", 0, "harness time.time() at spawn")
	flag.BoolVar(&o.tracemalloc, "tracemalloc", false, "report live heap bytes (memory)")
	flag.Float64Var(&o.timeout, "timeout", 600, "give up after seconds")
	flag.StringVar(&o.variant, "variant", "json", "json or protobuf")
	flag.IntVar(&o.limit, "limit", 0, "events: done after this many handler calls")
	flag.Float64Var(&o.qps, "qps", 1e6, "rest.Config QPS (0: client-go's default, 5)")
	flag.IntVar(&o.burst, "burst", 1000000, "rest.Config Burst (0: client-go's default, 10)")
	flag.IntVar(&o.gomaxprocs, "gomaxprocs", 1, "GOMAXPROCS (0: leave the runtime's choice)")
	flag.BoolVar(&o.get, "get", false, "worker GETs each object from the server")
	flag.BoolVar(&o.addRateLimited, "add-rate-limited", false, "handlers AddRateLimited")
	flag.BoolVar(&o.dynamic, "dynamic", false, "dynamic client, unstructured objects")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile here")
	flag.BoolVar(&o.noPin, "no-pin", false, "ignore --cpu: keep the affinity inherited at exec")
	flag.Parse()
	if o.workload != "events" && o.workload != "sync" && o.workload != "latency" {
		fmt.Fprintf(os.Stderr, "--workload: events, sync or latency, not %q\n", o.workload)
		os.Exit(2)
	}
	return o
}

// pin sets the affinity of every thread of the process (threads made later inherit it from
// the thread that clones them): sched_setaffinity(0, ...) alone pins only the calling thread.
func pin(cpu int) {
	if cpu < 0 {
		return
	}
	var set unix.CPUSet
	set.Set(cpu)
	tasks, _ := ioutil.ReadDir("/proc/self/task")
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil {
			_ = unix.SchedSetaffinity(tid, &set)
		}
	}
}

func rssBytes() int64 {
	b, err := ioutil.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

// recorder mirrors _common.Recorder: counts handler calls, decides when the workload is done.
type recorder struct {
	o                               *options
	mu                              sync.Mutex
	calls                           int
	keys                            map[string]struct{}
	tOpen, tFirst, tLast, tSynced   float64
	cpuOpen, cpuDone, cpuSynced     float64
	callsSynced                     int
	gcSynced                        uint64 // NumGC when synced: pauses up to it are the sync's
	rssSynced                       int64
	rssOpen                         int64
	heapOpen, heapInuseOpen, gcOpen uint64
	latencies                       []float64
	done                            chan struct{}
	doneOnce, openOnce              sync.Once
}

func (r *recorder) opened() {
	r.openOnce.Do(func() {
		runtime.GC() // the heap baseline (a few hundred KB now: nothing is cached yet)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		r.heapOpen, r.heapInuseOpen, r.gcOpen = ms.HeapAlloc, ms.HeapInuse, uint64(ms.NumGC)
		r.rssOpen = rssBytes()
		r.tOpen = now()
		r.cpuOpen = cpuSeconds()
	})
}

func (r *recorder) handled(name, namespace string, annotations map[string]string) {
	t := now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.tFirst == 0 {
		r.tFirst = t
	}
	r.tLast = t
	w := r.o.workload
	if w == "sync" || (w == "latency" && r.tSynced == 0) {
		r.keys[namespace+"/"+name] = struct{}{}
		if len(r.keys) >= r.o.n && r.tSynced == 0 {
			r.tSynced = t
			r.cpuSynced, r.callsSynced = cpuSeconds(), r.calls
			r.rssSynced = rssBytes()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			r.gcSynced = uint64(ms.NumGC)
			if w == "sync" {
				r.finish()
			} else {
				os.Stdout.WriteString("synced\n")
			}
		}
		return
	}
	if stamp, ok := annotations[stampAnnotation]; ok && w == "latency" {
		if s, err := strconv.ParseFloat(stamp, 64); err == nil {
			r.latencies = append(r.latencies, t-s)
		}
	}
	if _, final := annotations[finalAnnotation]; final && name == r.o.marker {
		r.finish()
	} else if r.o.limit > 0 && r.calls >= r.o.limit {
		r.finish()
	}
}

func (r *recorder) finish() {
	r.doneOnce.Do(func() {
		r.cpuDone = cpuSeconds()
		close(r.done)
	})
}

func quantiles(s []float64) map[string]interface{} {
	sort.Float64s(s)
	q := func(p float64) float64 {
		i := int(p * float64(len(s)))
		if i > len(s)-1 {
			i = len(s) - 1
		}
		return s[i]
	}
	return map[string]interface{}{"n": len(s), "p50": q(0.50), "p90": q(0.90), "p99": q(0.99),
		"max": s[len(s)-1]}
}

// threadCPUSeconds: CPU seconds (user + system) per live thread, from /proc/self/task.
func threadCPUSeconds() map[string]float64 {
	out := map[string]float64{}
	tasks, _ := filepath.Glob("/proc/self/task/*/stat")
	for _, p := range tasks {
		b, err := ioutil.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		u, _ := strconv.ParseFloat(f[11], 64)
		k, _ := strconv.ParseFloat(f[12], 64)
		out["tid-"+filepath.Base(filepath.Dir(p))] = (u + k) / 100 // USER_HZ
	}
	return out
}

// controller is the example's Controller: informer, indexer, queue, one worker.
type controller struct {
	o        *options
	rec      *recorder
	client   kubernetes.Interface
	informer cache.SharedIndexInformer
	queue    workqueue.RateLimitingInterface
}

func (c *controller) enqueue(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	if c.o.addRateLimited {
		c.queue.AddRateLimited(key)
	} else {
		c.queue.Add(key)
	}
}

func (c *controller) processNextItem() bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.reconcile(key.(string)); err != nil {
		if c.queue.NumRequeues(key) < 5 {
			c.queue.AddRateLimited(key)
			return true
		}
	}
	c.queue.Forget(key)
	return true
}

func (c *controller) reconcile(key string) error {
	var pod *v1.Pod
	if c.o.get {
		ns, name, err := cache.SplitMetaNamespaceKey(key)
		if err != nil {
			return err
		}
		pod, err = c.client.CoreV1().Pods(ns).Get(context.TODO(), name, metav1.GetOptions{})
		if err != nil {
			return nil // deleted meanwhile: nothing to do
		}
	} else {
		obj, exists, err := c.informer.GetIndexer().GetByKey(key)
		if err != nil {
			return err
		}
		if !exists {
			return nil
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			c.rec.handled(u.GetName(), u.GetNamespace(), u.GetAnnotations())
			return nil
		}
		pod = obj.(*v1.Pod)
	}
	c.rec.handled(pod.Name, pod.Namespace, pod.Annotations)
	return nil
}

func (c *controller) run(stop chan struct{}) {
	go c.informer.Run(stop)
	if !cache.WaitForCacheSync(stop, c.informer.HasSynced) {
		return
	}
	go func() {
		for c.processNextItem() {
		}
	}()
}

func main() {
	o := parseArgs()
	if !o.noPin {
		pin(o.cpu)
	}
	if o.gomaxprocs > 0 {
		runtime.GOMAXPROCS(o.gomaxprocs)
	}
	rec := &recorder{o: o, keys: map[string]struct{}{}, done: make(chan struct{})}
	rssStart := rssBytes()

	config, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		klog.Fatal(err)
	}
	config.QPS, config.Burst = float32(o.qps), o.burst
	if o.variant == "protobuf" {
		config.ContentType = "application/vnd.kubernetes.protobuf"
		config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		klog.Fatal(err)
	}
	pods := client.CoreV1().Pods(o.namespace)
	listed := false
	lw := &cache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (kruntime.Object, error) {
			rec.opened()
			if o.workload == "events" && !listed {
				// The first LIST answers nothing at --since, so that the watch replays the
				// server's history (run.py's events workload; the Python informers do the same).
				listed = true
				return &v1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: o.since}}, nil
			}
			return pods.List(context.TODO(), opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			rec.opened()
			return pods.Watch(context.TODO(), opts)
		},
	}
	var example kruntime.Object = &v1.Pod{}
	if o.dynamic {
		dyn, err := dynamic.NewForConfig(config)
		if err != nil {
			klog.Fatal(err)
		}
		res := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).
			Namespace(o.namespace)
		example = &unstructured.Unstructured{}
		lw.ListFunc = func(opts metav1.ListOptions) (kruntime.Object, error) {
			rec.opened()
			if o.workload == "events" && !listed {
				listed = true
				l := &unstructured.UnstructuredList{Object: map[string]interface{}{}}
				l.SetResourceVersion(o.since)
				return l, nil
			}
			return res.List(context.TODO(), opts)
		}
		lw.WatchFunc = func(opts metav1.ListOptions) (watch.Interface, error) {
			rec.opened()
			return res.Watch(context.TODO(), opts)
		}
	}
	informer := cache.NewSharedIndexInformer(lw, example, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	c := &controller{o: o, rec: rec, client: client, informer: informer,
		queue: workqueue.NewRateLimitingQueue(workqueue.DefaultControllerRateLimiter())}
	informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj interface{}) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	})
	if o.cpuprofile != "" {
		f, err := os.Create(o.cpuprofile)
		if err != nil {
			klog.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			klog.Fatal(err)
		}
	}
	stop := make(chan struct{})
	c.run(stop)

	select {
	case <-rec.done:
	case <-time.After(time.Duration(o.timeout * float64(time.Second))):
	}
	tDone := now()
	if o.cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var maxPause, total, maxSync, maxAfter uint64
	gcs := uint64(ms.NumGC) - rec.gcOpen
	for i := uint64(0); i < gcs && i < 256; i++ {
		p := ms.PauseNs[(uint64(ms.NumGC)+255-i)%256]
		total += p
		if p > maxPause {
			maxPause = p
		}
		// the GC numbered NumGC-i (1-based): the sync's when at or before gcSynced
		if rec.gcSynced > 0 && uint64(ms.NumGC)-i <= rec.gcSynced {
			if p > maxSync {
				maxSync = p
			}
		} else if p > maxAfter {
			maxAfter = p
		}
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)

	rec.mu.Lock()
	ok := false
	select {
	case <-rec.done:
		ok = true
	default:
	}
	out := map[string]interface{}{
		"contender": "client-go", "workload": o.workload, "variant": o.variant,
		"t_spawn": o.tSpawn, "t_imported": tImported, "ok": ok, "pid": os.Getpid(), "cpu": o.cpu,
		"calls": rec.calls, "distinct": len(rec.keys), "t_open": rec.tOpen,
		"t_first": rec.tFirst, "t_last": rec.tLast, "t_synced": rec.tSynced, "t_done": tDone,
		"gc_max_pause": float64(maxPause) / 1e9, "gc_total": float64(total) / 1e9,
		"gc_count": []uint64{gcs, 0, 0}, "gc_long": []interface{}{},
		"rss_start": rssStart, "rss_before": rec.rssOpen, "rss_after": rssBytes(),
		"heap_alloc_bytes": int64(after.HeapAlloc) - int64(rec.heapOpen),
		"heap_inuse_bytes": int64(after.HeapInuse) - int64(rec.heapInuseOpen),
		"heap_sys_bytes":   after.HeapSys, "gc_cpu_fraction": ms.GCCPUFraction,
		"go": runtime.Version(), "gomaxprocs": runtime.GOMAXPROCS(0), "tree": treeVersion,
		"qps": o.qps, "burst": o.burst, "get": o.get, "add_rate_limited": o.addRateLimited,
		"content_type": config.ContentType, "no_pin": o.noPin, "dynamic": o.dynamic,
	}
	if ok {
		out["cpu_s"], out["cpu_total_s"] = rec.cpuDone-rec.cpuOpen, rec.cpuDone
	} else {
		out["cpu_s"], out["cpu_total_s"] = nil, nil
	}
	out["calls_synced"] = rec.callsSynced
	if rec.gcSynced > 0 && o.workload == "latency" { // as _common.GcMonitor.mark
		out["gc_sync_max_pause"] = float64(maxSync) / 1e9
		out["gc_after_max_pause"] = float64(maxAfter) / 1e9
		out["gc_sync_count"] = []uint64{rec.gcSynced - rec.gcOpen, 0, 0}
		out["gc_after_count"] = []uint64{uint64(ms.NumGC) - rec.gcSynced, 0, 0}
		out["cpu_synced_total_s"] = rec.cpuSynced
		out["rss_synced"] = rec.rssSynced
	}
	if rec.cpuSynced > 0 {
		out["cpu_synced_s"] = rec.cpuSynced - rec.cpuOpen
	} else {
		out["cpu_synced_s"] = nil
	}
	if o.tracemalloc {
		out["traced_bytes"] = out["heap_alloc_bytes"]
	}
	if len(rec.latencies) > 0 {
		out["latency"] = quantiles(rec.latencies)
	}
	rec.mu.Unlock()
	out["thread_cpu_s"] = threadCPUSeconds()
	line, _ := json.Marshal(out)
	os.Stdout.Write(append(line, '\n'))
	if ok {
		os.Exit(0)
	}
	os.Exit(3)
}
