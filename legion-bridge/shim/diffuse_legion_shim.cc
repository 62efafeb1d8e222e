// The C++ side of diffuse's Legion backend; the interface and its contract are in
// diffuse_legion_shim.h.

#include "diffuse_legion_shim.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "legion.h"
#include "legion/bindings/c_bindings_util.h"
#include "mappers/default_mapper.h"
#ifdef REALM_USE_CUDA
#include "realm/cuda/cuda_module.h"
#endif

using namespace Legion;
using namespace Legion::Mapping;

namespace {

// ---------------------------------------------------------------------------------------
// The machine in diffuse's numbering: per kind and node, the processors ordered by id.

struct ProcessorTable {
  std::map<Processor::Kind, std::vector<std::vector<Processor>>> by_kind;
  unsigned nodes = 0;

  explicit ProcessorTable(Machine machine) {
    Machine::ProcessorQuery all(machine);
    for (Processor p : all) nodes = std::max(nodes, unsigned(p.address_space()) + 1);
    for (Processor::Kind kind :
         {Processor::LOC_PROC, Processor::TOC_PROC, Processor::OMP_PROC}) {
      std::vector<std::vector<Processor>> per_node(nodes);
      Machine::ProcessorQuery of_kind(machine);
      of_kind.only_kind(kind);
      for (Processor p : of_kind) per_node[p.address_space()].push_back(p);
      for (auto& procs : per_node) std::sort(procs.begin(), procs.end());
      by_kind[kind] = std::move(per_node);
    }
  }

  static Processor::Kind legion_kind(int32_t kind) {
    switch (kind) {
      case DIFFUSE_PROC_GPU: return Processor::TOC_PROC;
      case DIFFUSE_PROC_OMP: return Processor::OMP_PROC;
      default: return Processor::LOC_PROC;
    }
  }

  // The Legion processor of a diffuse choice, or NO_PROC if the machine has no such one.
  Processor find(const diffuse_proc_choice_t& choice) const {
    auto it = by_kind.find(legion_kind(choice.kind));
    if (it == by_kind.end() || choice.node >= it->second.size()) return Processor::NO_PROC;
    const auto& procs = it->second[choice.node];
    return choice.index < procs.size() ? procs[choice.index] : Processor::NO_PROC;
  }

  bool identify(Processor p, diffuse_proc_choice_t* out) const {
    auto it = by_kind.find(p.kind());
    if (it == by_kind.end() || p.address_space() >= it->second.size()) return false;
    const auto& procs = it->second[p.address_space()];
    auto at = std::lower_bound(procs.begin(), procs.end(), p);
    if (at == procs.end() || *at != p) return false;
    out->kind = p.kind() == Processor::TOC_PROC   ? DIFFUSE_PROC_GPU
                : p.kind() == Processor::OMP_PROC ? DIFFUSE_PROC_OMP
                                                  : DIFFUSE_PROC_CPU;
    out->node = p.address_space();
    out->index = uint32_t(at - procs.begin());
    return true;
  }

  // Processors of `kind` on node 0 (diffuse assumes every node alike).
  uint32_t count(Processor::Kind kind) const {
    auto it = by_kind.find(kind);
    if (it == by_kind.end() || it->second.empty()) return 0;
    return uint32_t(it->second[0].size());
  }
};

// Built on first use, which is after the runtime started (Machine::get_machine needs it).
const ProcessorTable& table() {
  static const ProcessorTable t(Machine::get_machine());
  return t;
}

// ---------------------------------------------------------------------------------------
// What diffuse registered (written once, before Legion starts; read-only afterwards).

diffuse_mapper_callbacks_t callbacks{};
TaskID point_task_id = 0;

bool is_point_task(const Task& task) { return task.task_id == point_task_id; }

const char* proc_kind_name(int32_t kind) {
  switch (kind) {
    case DIFFUSE_PROC_GPU: return "GPU";
    case DIFFUSE_PROC_OMP: return "OMP";
    default: return "CPU";
  }
}

Memory::Kind legion_memory(int32_t kind) {
  switch (kind) {
    case DIFFUSE_MEM_FBMEM: return Memory::GPU_FB_MEM;
    case DIFFUSE_MEM_ZCMEM: return Memory::Z_COPY_MEM;
    case DIFFUSE_MEM_SOCKMEM: return Memory::SOCKET_MEM;
    default: return Memory::SYSTEM_MEM;
  }
}

const char* memory_name(Memory::Kind kind) {
  switch (kind) {
    case Memory::SYSTEM_MEM: return "SYSMEM";
    case Memory::GPU_FB_MEM: return "FBMEM";
    case Memory::Z_COPY_MEM: return "ZCMEM";
    case Memory::SOCKET_MEM: return "SOCKMEM";
    case Memory::REGDMA_MEM: return "REGDMA_MEM";
    default: return "another Legion memory kind";
  }
}

const char* processor_name(Processor::Kind kind) {
  switch (kind) {
    case Processor::LOC_PROC: return "a CPU";
    case Processor::TOC_PROC: return "a GPU";
    case Processor::OMP_PROC: return "an OpenMP processor";
    default: return "a Legion processor";
  }
}

void notice(const std::string& message) {
  if (callbacks.notice != nullptr) callbacks.notice(message.c_str());
}

// Points of diffuse launches mapped onto each processor of this process and not finished
// yet: the load `TaskSteal` balances. A point replayed from a Legion trace is not mapped
// again, so it is not counted: `counted_points` holds the points that are, with their
// processor, and only those take their count back when they finish.
std::mutex load_mutex;
std::map<Processor, int> point_load;
std::map<UniqueID, Processor> counted_points;

int load_of(Processor p) {
  std::lock_guard<std::mutex> lock(load_mutex);
  auto it = point_load.find(p);
  return it == point_load.end() ? 0 : it->second;
}

// Counts the point task `task`, mapped onto `p`, until it finishes.
void count_point(const Task& task, Processor p) {
  std::lock_guard<std::mutex> lock(load_mutex);
  counted_points[task.get_unique_id()] = p;
  point_load[p] += 1;
}

// The point task `task` finished: its count, if it was counted, goes.
void uncount_point(const Task& task) {
  std::lock_guard<std::mutex> lock(load_mutex);
  auto it = counted_points.find(task.get_unique_id());
  if (it == counted_points.end()) return;
  point_load[it->second] -= 1;
  counted_points.erase(it);
}

// Whether some launch let its points be stolen by processors of any node (thieves then also
// ask other nodes).
std::atomic<bool> steal_anywhere_seen{false};

// The processor kinds the point task has variants for (bit 1 << diffuse_proc_kind_t), found
// by the first mapper call that slices a point task; 0 before.
std::atomic<uint32_t> point_variant_kinds{0};

// The launch's `TaskSteal` scope (DIFFUSE_STEAL_NONE without an answer).
int32_t steal_scope(const Task& task) {
  if (callbacks.steal_scope == nullptr) return DIFFUSE_STEAL_NONE;
  return callbacks.steal_scope(task.args, task.arglen);
}

// `point`'s coordinates in `out`; returns how many.
int coordinates(const DomainPoint& point, int64_t (&out)[LEGION_MAX_DIM]) {
  int dims = std::max(0, std::min(point.get_dim(), int(LEGION_MAX_DIM)));
  for (int d = 0; d < dims; d++) out[d] = point[d];
  return dims;
}

// The processor diffuse names for `point` of `task`: NO_PROC (after a notice when diffuse
// named one this machine lacks) when the DefaultMapper should decide.
Processor point_target(const Task& task, const DomainPoint& point) {
  if (callbacks.point_processor == nullptr) return Processor::NO_PROC;
  int64_t coords[LEGION_MAX_DIM] = {};
  int dims = coordinates(point, coords);
  diffuse_proc_choice_t choice{};
  if (callbacks.point_processor(task.args, task.arglen, coords, dims, &choice) != 0)
    return Processor::NO_PROC;
  Processor target = table().find(choice);
  if (!target.exists()) {
    notice(std::string("a point was placed on ") + proc_kind_name(choice.kind) + " " +
           std::to_string(choice.index) + " of node " + std::to_string(choice.node) +
           ", which this Legion machine does not have; the DefaultMapper placed the launch");
  }
  return target;
}

// The dimension ordering diffuse's kernels address (Legion lists the fastest first):
// C order puts the last dimension fastest, Fortran order the first; the field is slowest.
std::vector<DimensionKind> dimension_order(int dims, bool fortran) {
  std::vector<DimensionKind> order;
  for (int i = 0; i < dims; i++) {
    int d = fortran ? i : dims - 1 - i;
    order.push_back(DimensionKind(LEGION_DIM_X + d));
  }
  order.push_back(LEGION_DIM_F);
  return order;
}

// ---------------------------------------------------------------------------------------
// The mapper.

class DiffuseMapper : public DefaultMapper {
 public:
  DiffuseMapper(MapperRuntime* rt, Machine machine, Processor local)
      : DefaultMapper(rt, machine, local, "diffuse") {}

  // A point task launched on its own (not in an index launch) starts where diffuse says.
  void select_task_options(MapperContext ctx, const Task& task,
                           TaskOptions& output) override {
    DefaultMapper::select_task_options(ctx, task, output);
    if (!is_point_task(task) || task.is_index_space) return;
    Processor target = runnable(point_target(task, task.index_point), variant_kinds(ctx));
    if (target.exists()) output.initial_proc = target;
  }

  // One slice per launch point, on the processor diffuse names for it. If diffuse has no
  // answer for some point, the DefaultMapper slices the whole launch.
  void slice_task(MapperContext ctx, const Task& task, const SliceTaskInput& input,
                  SliceTaskOutput& output) override {
    if (!is_point_task(task) || callbacks.point_processor == nullptr) {
      DefaultMapper::slice_task(ctx, task, input, output);
      return;
    }
    std::vector<TaskSlice> slices;
    int32_t scope = steal_scope(task);
    if (scope == DIFFUSE_STEAL_ANY_NODE) steal_anywhere_seen.store(true);
    uint32_t variants = variant_kinds(ctx);
    for (Domain::DomainPointIterator it(input.domain); it; it++) {
      Processor target = runnable(point_target(task, it.p), variants);
      if (!target.exists()) {
        DefaultMapper::slice_task(ctx, task, input, output);
        return;
      }
      slices.push_back(TaskSlice(Domain(it.p, it.p), target, false /*recurse*/,
                                 scope != DIFFUSE_STEAL_NONE /*stealable*/));
    }
    output.slices = std::move(slices);
  }

  // Mapple's `TaskSteal`, as work sharing: the DefaultMapper maps every ready task at once,
  // after which Legion cannot steal it, so a stealable point goes to the least loaded
  // processor of its kind on this node (this one on ties) instead of queueing behind the
  // points already mapped here. Other tasks are mapped here, as the DefaultMapper does.
  void select_tasks_to_map(MapperContext ctx, const SelectMappingInput& input,
                           SelectMappingOutput& output) override {
    std::map<Processor, int> promised;
    std::vector<Processor> peers;
    for (const Task* task : input.ready_tasks) {
      if (!is_point_task(*task) || steal_scope(*task) == DIFFUSE_STEAL_NONE) {
        output.map_tasks.insert(task);
        continue;
      }
      if (peers.empty()) {
        Machine::ProcessorQuery query(machine);
        query.only_kind(local_proc.kind());
        query.same_address_space_as(local_proc);
        peers.assign(query.begin(), query.end());
      }
      Processor best = local_proc;
      int best_load = load_of(local_proc) + promised[local_proc];
      for (Processor p : peers) {
        int load = load_of(p) + promised[p];
        if (load < best_load) {
          best = p;
          best_load = load;
        }
      }
      promised[best]++;
      if (best == local_proc)
        output.map_tasks.insert(task);
      else
        output.relocate_tasks[task] = best;
    }
  }

  // Mapple's `TaskSteal`: an idle processor asks the other processors of its kind for work,
  // on its node, and on every node once some launch allowed stealing from anywhere.
  void select_steal_targets(MapperContext ctx, const SelectStealingInput& input,
                            SelectStealingOutput& output) override {
    Machine::ProcessorQuery query(machine);
    query.only_kind(local_proc.kind());
    if (!steal_anywhere_seen.load()) query.same_address_space_as(local_proc);
    for (Processor p : query) {
      if (p != local_proc && input.blacklist.find(p) == input.blacklist.end())
        output.targets.insert(p);
    }
  }

  // The victim's side: only the points of launches that allow it, and for `SAME_NODE` only
  // to thieves on this node.
  void permit_steal_request(MapperContext ctx, const StealRequestInput& input,
                            StealRequestOutput& output) override {
    for (const Task* task : input.stealable_tasks) {
      if (!is_point_task(*task)) continue;
      int32_t scope = steal_scope(*task);
      bool same_node = input.thief_proc.address_space() == local_proc.address_space();
      if (scope == DIFFUSE_STEAL_ANY_NODE || (scope == DIFFUSE_STEAL_SAME_NODE && same_node))
        output.stolen_tasks.insert(task);
    }
  }

  // In a control-replicated run, a launch's points belong to the shards of the nodes diffuse
  // placed them on: the launch names a sharding functor built from its placement.
  void select_sharding_functor(MapperContext ctx, const Task& task,
                               const SelectShardingFunctorInput& input,
                               SelectShardingFunctorOutput& output) override {
    uint32_t sharding = 0;
    if (is_point_task(task) && task.arglen >= 12) {
      std::memcpy(&sharding, static_cast<const char*>(task.args) + 8, sizeof sharding);
      output.chosen_functor = sharding;
      output.slice_recurse = false;
      return;
    }
    DefaultMapper::select_sharding_functor(ctx, task, input, output);
  }

  // Every reduction gets a fresh reduction instance. Reused ones kept folding launch after
  // launch, and in a control-replicated run Legion then never applied those of the other
  // nodes to the region once its first reduction had run on node 0 alone (measured with
  // Legion 25.12: the contributions of node 1 were lost).
  bool default_policy_select_reduction_instance_reuse(MapperContext ctx) override {
    return false;
  }

  // A point runs on exactly the processor its slice (or select_task_options) sent it to.
  void default_policy_select_target_processors(MapperContext ctx, const Task& task,
                                               std::vector<Processor>& target_procs) override {
    if (!is_point_task(task)) {
      DefaultMapper::default_policy_select_target_processors(ctx, task, target_procs);
      return;
    }
    target_procs.assign(1, task.target_proc);
  }

  // The DefaultMapper's cached mappings are keyed by the regions only, not by the launch,
  // whose memory and layout choices may differ: diffuse's point tasks are mapped afresh.
  CachedMappingPolicy default_policy_select_task_cache_policy(MapperContext ctx,
                                                             const Task& task) override {
    if (is_point_task(task) && callbacks.region_choice != nullptr)
      return DEFAULT_CACHE_POLICY_DISABLE;
    return DefaultMapper::default_policy_select_task_cache_policy(ctx, task);
  }

  void map_task(MapperContext ctx, const Task& task, const MapTaskInput& input,
                MapTaskOutput& output) override {
    // A point counts towards its processor's load until the point task reports it finished.
    if (is_point_task(task)) count_point(task, task.target_proc);
    if (!is_point_task(task) || callbacks.region_choice == nullptr) {
      DefaultMapper::map_task(ctx, task, input, output);
      return;
    }
    Mapping mapping{&task, std::vector<Choice>(task.regions.size())};
    for (unsigned i = 0; i < task.regions.size(); i++) {
      Choice& c = mapping.choices[i];
      c.valid = callbacks.region_choice(task.args, task.arglen, i, &c.choice) == 0;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      mappings_[ctx] = mapping;
    }
    struct Forget {
      DiffuseMapper* self;
      MapperContext ctx;
      ~Forget() {
        std::lock_guard<std::mutex> lock(self->mutex_);
        self->mappings_.erase(ctx);
      }
    } forget{this, ctx};

    // The DefaultMapper reuses any valid instance in the target memory whatever its
    // layout; keep only those with the layout diffuse asked for.
    MapTaskInput filtered = input;
    for (unsigned i = 0; i < task.regions.size() && i < filtered.valid_instances.size(); i++) {
      const Choice& c = mapping.choices[i];
      if (task.regions[i].privilege == LEGION_REDUCE) continue;
      LayoutConstraintSet wanted;
      add_layout(wanted, task.regions[i], c.valid ? &c.choice : nullptr, {});
      auto& valid = filtered.valid_instances[i];
      valid.erase(std::remove_if(valid.begin(), valid.end(),
                                 [&](const PhysicalInstance& inst) {
                                   return !inst.entails(wanted);
                                 }),
                  valid.end());
    }
    DefaultMapper::map_task(ctx, task, filtered, output);

    // Mapple's GarbageCollect: the instance goes as soon as it holds no valid data. So does
    // every reduction instance (each reduction gets a fresh one, see above): left to
    // Legion's default priority they were kept until memory ran short, and the metadata of
    // one per point and launch grew the process by megabytes a second (cg n = 256 on 4
    // processors: 6 MB/s).
    for (unsigned i = 0; i < task.regions.size() && i < output.chosen_instances.size(); i++) {
      const Choice& c = mapping.choices[i];
      bool reduces = task.regions[i].privilege == LEGION_REDUCE;
      if (!reduces && (!c.valid || c.choice.collect == 0)) continue;
      for (const PhysicalInstance& inst : output.chosen_instances[i]) {
        if (inst.is_virtual_instance() || inst.is_external_instance()) continue;
        runtime->set_garbage_collection_priority(ctx, inst, LEGION_GC_EAGER_PRIORITY);
      }
    }
  }

  // The memory of the kind diffuse names, with affinity to the point's processor.
  Memory default_policy_select_target_memory(MapperContext ctx, Processor target_proc,
                                             const RegionRequirement& req,
                                             MemoryConstraint mc) override {
    diffuse_region_choice_t choice{};
    if (!choice_for(ctx, req, &choice))
      return DefaultMapper::default_policy_select_target_memory(ctx, target_proc, req, mc);
    Memory::Kind wanted = legion_memory(choice.memory);
    if (target_proc.kind() == Processor::TOC_PROC && wanted != Memory::GPU_FB_MEM &&
        wanted != Memory::Z_COPY_MEM) {
      notice(std::string("Mapple placed a region of a GPU point in ") + memory_name(wanted) +
             ", which the GPU's kernels cannot address; it goes to FBMEM");
      wanted = Memory::GPU_FB_MEM;
    }
    Memory best = Memory::NO_MEMORY;
    if (!mc.is_valid() || mc.get_kind() == wanted) {
      Machine::MemoryQuery query(machine);
      query.has_affinity_to(target_proc);
      query.only_kind(wanted);
      unsigned best_bandwidth = 0;
      std::vector<Machine::ProcessorMemoryAffinity> affinity;
      for (Memory m : query) {
        affinity.clear();
        machine.get_proc_mem_affinity(affinity, target_proc, m, false);
        unsigned bandwidth = affinity.empty() ? 0 : affinity[0].bandwidth;
        if (!best.exists() || bandwidth > best_bandwidth) {
          best = m;
          best_bandwidth = bandwidth;
        }
      }
    }
    if (best.exists()) return best;
    Memory fallback = DefaultMapper::default_policy_select_target_memory(ctx, target_proc, req, mc);
    notice(std::string("Mapple placed a region in ") + memory_name(wanted) + " for " +
           processor_name(target_proc.kind()) + ", which has no such memory here" +
           (mc.is_valid() && mc.get_kind() != wanted ? " (the task variant requires another)"
                                                     : "") +
           "; the DefaultMapper chose " + memory_name(fallback.kind()) + " instead");
    return fallback;
  }

  // The DefaultMapper caches one layout per (memory kind, field space), or per (memory
  // kind, reduction operator); diffuse's layouts also depend on the region's dimensions
  // and on the launch's choice, so the cache here is keyed by all of them.
  LayoutConstraintID default_policy_select_layout_constraints(
      MapperContext ctx, Memory target_memory, const RegionRequirement& req,
      MappingKind mapping_kind, bool needs_field_constraint_check,
      bool& force_new_instances) override {
    const bool reduce = req.privilege == LEGION_REDUCE;
    force_new_instances = reduce && !default_policy_select_reduction_instance_reuse(ctx);
    diffuse_region_choice_t choice{};
    bool asked = choice_for(ctx, req, &choice);
    bool fortran = asked && choice.fortran != 0;
    uint32_t alignment = asked ? choice.alignment : 0;
    LayoutKey key{target_memory.kind(),
                  reduce ? 0u : unsigned(req.region.get_field_space().get_id()),
                  reduce ? unsigned(req.redop) : 0u,
                  req.region.get_index_space().get_dim(),
                  fortran,
                  alignment,
                  {}};
    // The alignment constraint names fields: those of a reduction instance are the
    // requirement's; a normal instance has all the field space's.
    if (alignment > 0 && reduce)
      key.fields.assign(req.privilege_fields.begin(), req.privilege_fields.end());
    if (!needs_field_constraint_check) {
      std::lock_guard<std::mutex> lock(mutex_);
      auto found = layouts_.find(key);
      if (found != layouts_.end()) return found->second;
    }
    LayoutConstraintSet constraints;
    default_policy_select_constraints(ctx, constraints, target_memory, req);
    LayoutConstraintID id = runtime->register_layout(ctx, constraints);
    std::lock_guard<std::mutex> lock(mutex_);
    layouts_[key] = id;
    return id;
  }

  // One instance per store and memory: every requirement (except a reduction's, which needs
  // a fresh instance of its own) maps to an instance of the whole region, so tasks that see
  // a store through different (aliased) partitions share one copy of it and Legion never
  // copies between overlapping instances.
  LogicalRegion default_policy_select_instance_region(MapperContext ctx, Memory target_memory,
                                                      const RegionRequirement& req,
                                                      const LayoutConstraintSet& constraints,
                                                      bool force_new_instances,
                                                      bool meets_constraints) override {
    if (req.privilege != LEGION_REDUCE && req.parent.exists()) return req.parent;
    return DefaultMapper::default_policy_select_instance_region(
        ctx, target_memory, req, constraints, force_new_instances, meets_constraints);
  }

  // C order (last dimension fastest, then the field) unless diffuse asks for Fortran
  // order, and the alignment diffuse asks for. Instances that are not for a point task
  // (inline mappings of diffuse's host copies) get C order too, so both share instances.
  void default_policy_select_constraints(MapperContext ctx, LayoutConstraintSet& constraints,
                                         Memory target_memory,
                                         const RegionRequirement& req) override {
    bool had_ordering = !constraints.ordering_constraint.ordering.empty();
    DefaultMapper::default_policy_select_constraints(ctx, constraints, target_memory, req);
    diffuse_region_choice_t choice{};
    bool asked = choice_for(ctx, req, &choice);
    std::vector<FieldID> fields = constraints.field_constraint.get_field_set();
    if (fields.empty()) fields.assign(req.privilege_fields.begin(), req.privilege_fields.end());
    // An ordering the caller set (a task variant's layout constraint) stays; the
    // DefaultMapper's own (first dimension fastest) gives way to diffuse's.
    if (!had_ordering) constraints.ordering_constraint = OrderingConstraint();
    add_layout(constraints, req, asked ? &choice : nullptr, fields);
  }

 private:
  // The kinds of processors the point task has variants for (bit 1 << diffuse_proc_kind_t),
  // asked of Legion once.
  uint32_t variant_kinds(MapperContext ctx) {
    uint32_t kinds = point_variant_kinds.load();
    if (kinds != 0) return kinds;
    const std::pair<Processor::Kind, int32_t> all[] = {{Processor::LOC_PROC, DIFFUSE_PROC_CPU},
                                                       {Processor::TOC_PROC, DIFFUSE_PROC_GPU},
                                                       {Processor::OMP_PROC, DIFFUSE_PROC_OMP}};
    for (const auto& [kind, diffuse_kind] : all) {
      std::vector<VariantID> variants;
      runtime->find_valid_variants(ctx, point_task_id, variants, kind);
      if (!variants.empty()) kinds |= 1u << diffuse_kind;
    }
    point_variant_kinds.store(kinds);
    return kinds;
  }

  // `target`, or when the point task has no variant for its kind (Legion would abort when
  // the point ran there) the processor of the same index among the node's CPUs, after a
  // notice.
  Processor runnable(Processor target, uint32_t kinds) const {
    if (!target.exists()) return target;
    diffuse_proc_choice_t choice{};
    if (!table().identify(target, &choice) || (kinds & (1u << choice.kind)) != 0) return target;
    uint32_t cpus = table().count(Processor::LOC_PROC);
    if (cpus == 0) return Processor::NO_PROC;
    notice(std::string("diffuse's point task has no variant for ") + proc_kind_name(choice.kind) +
           " processors; points placed on them run on CPUs");
    diffuse_proc_choice_t cpu{DIFFUSE_PROC_CPU, choice.node, choice.index % cpus};
    return table().find(cpu);
  }

  struct Choice {
    bool valid = false;
    diffuse_region_choice_t choice{};
  };
  // The point task a map_task call (its context) is mapping and diffuse's choices for it.
  struct Mapping {
    const Task* task = nullptr;
    std::vector<Choice> choices;
  };
  struct LayoutKey {
    Memory::Kind memory;
    unsigned field_space;
    unsigned redop;
    int dims;
    bool fortran;
    uint32_t alignment;
    std::vector<FieldID> fields;
    bool operator<(const LayoutKey& o) const {
      return std::tie(memory, field_space, redop, dims, fortran, alignment, fields) <
             std::tie(o.memory, o.field_space, o.redop, o.dims, o.fortran, o.alignment,
                      o.fields);
    }
  };

  // Adds diffuse's ordering (unless one is set) and alignment to `constraints`. `fields`:
  // the fields the alignment applies to (none: every privilege field of `req`).
  static void add_layout(LayoutConstraintSet& constraints, const RegionRequirement& req,
                         const diffuse_region_choice_t* choice,
                         const std::vector<FieldID>& fields) {
    if (constraints.ordering_constraint.ordering.empty()) {
      int dims = req.region.get_index_space().get_dim();
      bool fortran = choice != nullptr && choice->fortran != 0;
      constraints.ordering_constraint = OrderingConstraint(dimension_order(dims, fortran), false);
    }
    if (choice != nullptr && choice->alignment > 0) {
      std::vector<FieldID> aligned = fields;
      if (aligned.empty()) aligned.assign(req.privilege_fields.begin(), req.privilege_fields.end());
      for (FieldID fid : aligned)
        constraints.add_constraint(AlignmentConstraint(fid, LEGION_GE_EK, choice->alignment));
    }
  }

  // diffuse's choice for `req` when this mapper call maps a point task and `req` is one of
  // its region requirements (the DefaultMapper passes task.regions[i] itself).
  bool choice_for(MapperContext ctx, const RegionRequirement& req,
                  diffuse_region_choice_t* out) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = mappings_.find(ctx);
    if (found == mappings_.end()) return false;
    const Mapping& m = found->second;
    for (unsigned i = 0; i < m.task->regions.size(); i++) {
      if (&m.task->regions[i] != &req) continue;
      if (!m.choices[i].valid) return false;
      *out = m.choices[i].choice;
      return true;
    }
    return false;
  }

  // Mapper calls may interleave when one waits on the runtime (the DefaultMapper's
  // serialized re-entrant model), so per-call state is keyed by the call's context. The
  // lock is never held across a runtime call.
  std::mutex mutex_;
  std::map<MapperContext, Mapping> mappings_;
  std::map<LayoutKey, LayoutConstraintID> layouts_;
};

// ---------------------------------------------------------------------------------------
// The projection functor (its encoding is in the header).

class EncodedProjection : public ProjectionFunctor {
 public:
  explicit EncodedProjection(Runtime* rt) : ProjectionFunctor(rt) {}

  bool is_functional() const override { return true; }
  unsigned get_depth() const override { return 0; }

  // Without projection arguments: the identity (color = point).
  LogicalRegion project(LogicalPartition upper, const DomainPoint& point,
                        const Domain& launch) override {
    return runtime->get_logical_subregion_by_color(upper, point);
  }

  LogicalRegion project(LogicalPartition upper, const DomainPoint& point,
                        const Domain& launch, const void* args, size_t size) override {
    return runtime->get_logical_subregion_by_color(upper, color(point, args, size));
  }

 private:
  static DomainPoint color(const DomainPoint& point, const void* args, size_t size) {
    const int64_t* v = static_cast<const int64_t*>(args);
    size_t count = size / sizeof(int64_t);
    if (v == nullptr || count == 0) return point;
    int n = int(v[0]);
    if (n <= 0 || n > LEGION_MAX_DIM || count < size_t(1 + 2 * n)) return point;
    DomainPoint c;
    c.dim = n;
    for (int k = 0; k < n; k++) {
      int64_t tag = v[1 + 2 * k], value = v[2 + 2 * k];
      c[k] = tag == 0 && value >= 0 && value < point.get_dim() ? point[int(value)] : value;
    }
    return c;
  }
};

// ---------------------------------------------------------------------------------------
// Sharding in a control-replicated run: which shard (node) owns each launch point.

class PlacementSharding : public ShardingFunctor {
 public:
  explicit PlacementSharding(std::vector<uint32_t> nodes) : nodes_(std::move(nodes)) {}

  ShardID shard(const DomainPoint& point, const Domain& launch, const size_t total) override {
    if (nodes_.empty() || total == 0) return 0;
    // Diffuse numbers the point (the numbering `nodes_` is in); without an answer, the
    // first point's node.
    int64_t coords[LEGION_MAX_DIM] = {}, lo[LEGION_MAX_DIM] = {}, hi[LEGION_MAX_DIM] = {};
    int dims = coordinates(point, coords);
    coordinates(launch.lo(), lo);
    coordinates(launch.hi(), hi);
    uint64_t index = 0;
    if (callbacks.point_index == nullptr ||
        callbacks.point_index(coords, lo, hi, dims, &index) != 0)
      index = 0;
    return ShardID(nodes_[index % nodes_.size()] % total);
  }

 private:
  std::vector<uint32_t> nodes_;
};

void install_mappers(Machine machine, Runtime* runtime, const std::set<Processor>& local_procs) {
  for (Processor p : local_procs) {
    runtime->replace_default_mapper(new DiffuseMapper(runtime->get_mapper_runtime(), machine, p),
                                    p);
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------
// The C interface. Nothing throws across it: Legion reports errors by aborting, and the
// only other exception here would be std::bad_alloc.

extern "C" {

void diffuse_legion_register_mapper(const diffuse_mapper_callbacks_t* cb,
                                    legion_task_id_t point_task) {
  try {
    callbacks = *cb;
    point_task_id = point_task;
    Runtime::add_registration_callback(install_mappers);
  } catch (...) {
  }
}

void diffuse_legion_point_finished(legion_task_t task) {
  try {
    uncount_point(*CObjectWrapper::unwrap(task));
  } catch (...) {
  }
}

void diffuse_legion_register_projection(legion_runtime_t runtime, legion_projection_id_t id) {
  try {
    Runtime* rt = CObjectWrapper::unwrap(runtime);
    rt->register_projection_functor(id, new EncodedProjection(rt), true /*silence_warnings*/);
  } catch (...) {
  }
}

legion_context_t diffuse_legion_begin_implicit_task(legion_runtime_t runtime,
                                                    legion_task_id_t task_id,
                                                    const char* name, int32_t replicated,
                                                    int32_t shard) {
  try {
    Runtime* rt = CObjectWrapper::unwrap(runtime);
    Context ctx = rt->begin_implicit_task(task_id, 0 /*default mapper*/, Processor::LOC_PROC,
                                          name, replicated != 0, 1 /*shard per process*/,
                                          replicated != 0 ? shard : -1);
    return CObjectWrapper::wrap(new CContext(ctx));
  } catch (...) {
    return legion_context_t{nullptr};
  }
}

void diffuse_legion_register_sharding(legion_runtime_t runtime, uint32_t id,
                                      const uint32_t* nodes, size_t count) {
  try {
    Runtime* rt = CObjectWrapper::unwrap(runtime);
    rt->register_sharding_functor(
        id, new PlacementSharding(std::vector<uint32_t>(nodes, nodes + count)),
        true /*silence_warnings*/);
  } catch (...) {
  }
}

void diffuse_legion_finish_implicit_task(legion_runtime_t runtime, legion_context_t ctx) {
  try {
    Runtime* rt = CObjectWrapper::unwrap(runtime);
    CContext* cctx = CObjectWrapper::unwrap(ctx);
    rt->finish_implicit_task(cctx->context());
    delete cctx;
  } catch (...) {
  }
}

void diffuse_legion_machine_shape(uint32_t* nodes, uint32_t* cpus_per_node,
                                  uint32_t* gpus_per_node, uint32_t* omps_per_node) {
  try {
    const ProcessorTable& t = table();
    *nodes = t.nodes;
    *cpus_per_node = t.count(Processor::LOC_PROC);
    *gpus_per_node = t.count(Processor::TOC_PROC);
    *omps_per_node = t.count(Processor::OMP_PROC);
  } catch (...) {
    *nodes = *cpus_per_node = *gpus_per_node = *omps_per_node = 0;
  }
}

int32_t diffuse_legion_processor_identity(legion_processor_t proc, diffuse_proc_choice_t* out) {
  try {
    return table().identify(CObjectWrapper::unwrap(proc), out) ? 0 : 1;
  } catch (...) {
    return 1;
  }
}

uint32_t diffuse_legion_point_variant_kinds(void) { return point_variant_kinds.load(); }

void* diffuse_legion_task_cuda_stream(void) {
#ifdef REALM_USE_CUDA
  try {
    auto* cuda = Realm::Runtime::get_runtime().get_module<Realm::Cuda::CudaModule>("cuda");
    if (cuda == nullptr) return nullptr;
    CUstream_st* stream = cuda->get_task_cuda_stream();
    if (stream != nullptr) cuda->set_task_ctxsync_required(false);
    return stream;
  } catch (...) {
    return nullptr;
  }
#else
  return nullptr;
#endif
}

}  // extern "C"
