/* The C++ side of diffuse's Legion backend: what Legion's C API has no way in for.
 *
 * - The mapper: a Legion DefaultMapper subclass that asks diffuse (through the callbacks
 *   below, implemented in Rust) where every point of a diffuse launch runs, which memory each
 *   region requirement's instance lives in, and its layout. Tasks that are not diffuse point
 *   tasks are mapped by the DefaultMapper unchanged.
 * - The implicit top-level task: the thread that drives diffuse becomes Legion's top-level
 *   task, so no Legion processor is blocked waiting for the application.
 * - The machine as diffuse numbers it: processors of each kind per node, numbered by node
 *   and then by Legion's processor id, the same numbering in the mapper and in Rust.
 *
 * Every function is callable from C; nothing here throws across the boundary. */
#ifndef DIFFUSE_LEGION_SHIM_H
#define DIFFUSE_LEGION_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include "legion/bindings/c_bindings.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Processor kinds, as Mapple names them. */
enum diffuse_proc_kind_t {
  DIFFUSE_PROC_CPU = 0,
  DIFFUSE_PROC_GPU = 1,
  DIFFUSE_PROC_OMP = 2,
};

/* Where thieves of a launch's points may come from (the `steal_scope` callback). */
enum diffuse_steal_scope_t {
  DIFFUSE_STEAL_NONE = 0,
  DIFFUSE_STEAL_SAME_NODE = 1,
  DIFFUSE_STEAL_ANY_NODE = 2,
};

/* Memory kinds, as Mapple names them. */
enum diffuse_mem_kind_t {
  DIFFUSE_MEM_SYSMEM = 0,
  DIFFUSE_MEM_FBMEM = 1,
  DIFFUSE_MEM_ZCMEM = 2,
  DIFFUSE_MEM_SOCKMEM = 3,
};

/* One processor in diffuse's numbering: the `index`-th processor of `kind` on node `node`. */
typedef struct diffuse_proc_choice_t {
  int32_t kind;   /* enum diffuse_proc_kind_t */
  uint32_t node;  /* Legion address space */
  uint32_t index; /* among the node's processors of `kind`, in processor-id order */
} diffuse_proc_choice_t;

/* The instance a point task's region requirement is mapped to. */
typedef struct diffuse_region_choice_t {
  int32_t memory;     /* enum diffuse_mem_kind_t */
  int32_t fortran;    /* 0: C order (last dimension fastest, what diffuse's kernels need);
                         nonzero: Fortran order */
  uint32_t alignment; /* bytes; 0 = Legion's default */
  int32_t collect;    /* nonzero: collect the instance as soon as the task is done
                         (Mapple's GarbageCollect) */
} diffuse_region_choice_t;

/* Decisions diffuse makes for the mapper and the sharding functors. `args`/`arglen` are the
 * launch's global task arguments: the launch's key (8 bytes, identifying it on the Rust
 * side), then, in a control-replicated run, the id of the sharding functor that assigns its
 * points to shards (4 bytes). Each returns 0 when it filled `out`; anything else makes the
 * mapper fall back to the DefaultMapper's choice (a sharding functor: to the first point's
 * node). Called from Legion's threads, concurrently. */
typedef struct diffuse_mapper_callbacks_t {
  /* The processor of the launch point `point` (`dims` coordinates). */
  int32_t (*point_processor)(const void* args, size_t arglen, const int64_t* point,
                             int32_t dims, diffuse_proc_choice_t* out);
  /* The memory and layout of region requirement `req`'s instance. */
  int32_t (*region_choice)(const void* args, size_t arglen, uint32_t req,
                           diffuse_region_choice_t* out);
  /* A decision the mapper could not carry out and what it did instead (one line). */
  void (*notice)(const char* message);
  /* Whether the launch's points may be stolen (Mapple's `TaskSteal`): 0 no, 1 by processors
   * of the same node, 2 by processors of any node. */
  int32_t (*steal_scope)(const void* args, size_t arglen);
  /* The number of the launch point `point` in diffuse's one numbering of launch points
   * (row-major over the launch's domain, whose inclusive bounds are `lo` and `hi`; `dims`
   * coordinates each): the order of a launch's placement, so of a sharding functor's nodes. */
  int32_t (*point_index)(const int64_t* point, const int64_t* lo, const int64_t* hi,
                         int32_t dims, uint64_t* out);
} diffuse_mapper_callbacks_t;

/* Makes every processor's default mapper a diffuse mapper for tasks with id `point_task`
 * (other tasks: DefaultMapper behaviour). Must be called before legion_runtime_start; the
 * callbacks are copied. */
void diffuse_legion_register_mapper(const diffuse_mapper_callbacks_t* callbacks,
                                    legion_task_id_t point_task);

/* The diffuse point task `task` has finished (the mapper balances stealable points by the
 * points it mapped onto each processor and that have not finished). */
void diffuse_legion_point_finished(legion_task_t task);

/* Registers, as projection `id`, the functor that maps a launch point to a tile color through
 * the projection carried in each region requirement's projection arguments: int64 values
 * `n, tag_0, value_0, ..., tag_{n-1}, value_{n-1}`, where color coordinate k is the point's
 * coordinate `value_k` when `tag_k` is 0, and the constant `value_k` when it is 1. (The C
 * API's own registration functions are not exported with C linkage by the wheel.) */
void diffuse_legion_register_projection(legion_runtime_t runtime, legion_projection_id_t id);

/* Turns the calling (non-Legion) thread into Legion's top-level task `task_id` and returns
 * its context. Call after legion_runtime_start(..., background = true). With `replicated`,
 * the task is control replicated: every process calls this once, as shard `shard` (its
 * rank), and then issues the same operations in the same order. */
legion_context_t diffuse_legion_begin_implicit_task(legion_runtime_t runtime,
                                                    legion_task_id_t task_id,
                                                    const char* name, int32_t replicated,
                                                    int32_t shard);

/* Registers, as sharding functor `id`, the assignment of launch points to shards (nodes)
 * given by `nodes`: point i of a launch, numbered by the `point_index` callback, belongs to
 * shard `nodes[i % count] % total_shards`. Every process registers the same functors in
 * the same order before a launch uses them. */
void diffuse_legion_register_sharding(legion_runtime_t runtime, uint32_t id,
                                      const uint32_t* nodes, size_t count);

/* Ends the implicit top-level task begun above (from the same thread); the context is
 * invalid afterwards. Follow with legion_runtime_wait_for_shutdown. */
void diffuse_legion_finish_implicit_task(legion_runtime_t runtime, legion_context_t ctx);

/* The machine: number of nodes and, per node, processors of each kind (the counts of node
 * 0; diffuse assumes every node alike). */
void diffuse_legion_machine_shape(uint32_t* nodes, uint32_t* cpus_per_node,
                                  uint32_t* gpus_per_node, uint32_t* omps_per_node);

/* Processor `proc` in diffuse's numbering; returns 0 on success, nonzero for a processor
 * kind diffuse does not use (utility, I/O, Python). */
int32_t diffuse_legion_processor_identity(legion_processor_t proc, diffuse_proc_choice_t* out);

/* The processor kinds diffuse's point task has variants for, as a mask of
 * 1 << diffuse_proc_kind_t, as the mapper found them when it first placed a launch (0
 * before). A point placed on a kind without a variant runs on a CPU instead. */
uint32_t diffuse_legion_point_variant_kinds(void);

/* The CUDA stream Realm gave the GPU task running on the calling thread (a `CUstream`),
 * after telling Realm that the task puts all its GPU work on that stream (so the task's
 * completion waits for the stream, not for the whole context); NULL outside a task on a
 * GPU processor, or in a Legion built without CUDA. */
void* diffuse_legion_task_cuda_stream(void);

#ifdef __cplusplus
}
#endif

#endif
