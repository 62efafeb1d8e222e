// The C++ side of diffuse's Legion backend; the interface and its contract are in
// diffuse_legion_shim.h.

#include "diffuse_legion_shim.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "legion.h"
#include "legion/bindings/c_bindings_util.h"
#include "mappers/default_mapper.h"

using namespace Legion;
using namespace Legion::Mapping;

namespace {

// The processors of each kind on each node, ordered by id: diffuse's numbering.
struct ProcessorTable {
  std::map<Processor::Kind, std::vector<std::vector<Processor>>> by_kind;
  unsigned nodes = 0;

  explicit ProcessorTable(Machine machine) {
    Machine::ProcessorQuery query(machine);
    for (Processor p : query) nodes = std::max(nodes, unsigned(p.address_space()) + 1);
    for (Processor::Kind kind :
         {Processor::LOC_PROC, Processor::TOC_PROC, Processor::OMP_PROC}) {
      std::vector<std::vector<Processor>> per_node(nodes);
      Machine::ProcessorQuery of_kind(machine);
      of_kind.only_kind(kind);
      for (Processor p : of_kind) per_node[p.address_space()].push_back(p);
      for (auto& procs : per_node) std::sort(procs.begin(), procs.end());
      by_kind[kind] = per_node;
    }
  }

  static Processor::Kind legion_kind(int32_t kind) {
    switch (kind) {
      case DIFFUSE_PROC_GPU: return Processor::TOC_PROC;
      case DIFFUSE_PROC_OMP: return Processor::OMP_PROC;
      default: return Processor::LOC_PROC;
    }
  }

  // The Legion processor of a diffuse choice, or NO_PROC if the machine has none such.
  Processor find(const diffuse_proc_choice_t& choice) const {
    auto it = by_kind.find(legion_kind(choice.kind));
    if (it == by_kind.end() || choice.node >= it->second.size()) return Processor::NO_PROC;
    const auto& procs = it->second[choice.node];
    if (procs.empty()) return Processor::NO_PROC;
    return procs[choice.index % procs.size()];
  }

  bool identify(Processor p, diffuse_proc_choice_t* out) const {
    for (const auto& [kind, per_node] : by_kind) {
      if (p.address_space() >= per_node.size()) continue;
      const auto& procs = per_node[p.address_space()];
      auto at = std::find(procs.begin(), procs.end(), p);
      if (at == procs.end()) continue;
      out->kind = kind == Processor::TOC_PROC   ? DIFFUSE_PROC_GPU
                  : kind == Processor::OMP_PROC ? DIFFUSE_PROC_OMP
                                                : DIFFUSE_PROC_CPU;
      out->node = p.address_space();
      out->index = unsigned(at - procs.begin());
      return true;
    }
    return false;
  }

  uint32_t count(Processor::Kind kind) const {
    auto it = by_kind.find(kind);
    if (it == by_kind.end() || it->second.empty()) return 0;
    return uint32_t(it->second[0].size());
  }
};

const ProcessorTable& table() {
  static ProcessorTable t(Machine::get_machine());
  return t;
}

diffuse_mapper_callbacks_t callbacks{};
TaskID point_task_id = 0;

Memory::Kind legion_memory(int32_t kind) {
  switch (kind) {
    case DIFFUSE_MEM_FBMEM: return Memory::GPU_FB_MEM;
    case DIFFUSE_MEM_ZCMEM: return Memory::Z_COPY_MEM;
    case DIFFUSE_MEM_SOCKMEM: return Memory::SOCKET_MEM;
    default: return Memory::SYSTEM_MEM;
  }
}

const char* memory_name(int32_t kind) {
  switch (kind) {
    case DIFFUSE_MEM_FBMEM: return "FBMEM";
    case DIFFUSE_MEM_ZCMEM: return "ZCMEM";
    case DIFFUSE_MEM_SOCKMEM: return "SOCKMEM";
    default: return "SYSMEM";
  }
}

void notice(const std::string& message) {
  if (callbacks.notice != nullptr) callbacks.notice(message.c_str());
}

// A DefaultMapper that asks diffuse about its point tasks. Calls are serialized and not
// reentrant, so the task being mapped can be remembered across the DefaultMapper's policy
// calls (which do not receive it).
class DiffuseMapper : public DefaultMapper {
 public:
  DiffuseMapper(MapperRuntime* rt, Machine machine, Processor local)
      : DefaultMapper(rt, machine, local, "diffuse") {}

  MapperSyncModel get_mapper_sync_model() const override {
    return SERIALIZED_NON_REENTRANT_MAPPER_MODEL;
  }

  void slice_task(MapperContext ctx, const Task& task, const SliceTaskInput& input,
                  SliceTaskOutput& output) override {
    if (task.task_id != point_task_id || callbacks.point_processor == nullptr) {
      DefaultMapper::slice_task(ctx, task, input, output);
      return;
    }
    for (Domain::DomainPointIterator it(input.domain); it; it++) {
      const DomainPoint& p = it.p;
      int64_t coords[LEGION_MAX_DIM];
      for (int d = 0; d < p.get_dim(); d++) coords[d] = p[d];
      diffuse_proc_choice_t choice{};
      Processor target = Processor::NO_PROC;
      if (callbacks.point_processor(task.args, task.arglen, coords, p.get_dim(), &choice) == 0) {
        target = table().find(choice);
        if (!target.exists()) {
          notice("a point was placed on a processor this Legion machine does not have; "
                 "the DefaultMapper chose instead");
        }
      }
      if (!target.exists()) target = local_proc;
      output.slices.push_back(TaskSlice(Domain(p, p), target, false, false));
    }
  }

  void default_policy_select_target_processors(MapperContext ctx, const Task& task,
                                               std::vector<Processor>& target_procs) override {
    if (task.task_id == point_task_id) {
      target_procs.clear();
      target_procs.push_back(task.target_proc);
      return;
    }
    DefaultMapper::default_policy_select_target_processors(ctx, task, target_procs);
  }

  void map_task(MapperContext ctx, const Task& task, const MapTaskInput& input,
                MapTaskOutput& output) override {
    mapping_ = task.task_id == point_task_id ? &task : nullptr;
    DefaultMapper::map_task(ctx, task, input, output);
    mapping_ = nullptr;
  }

  Memory default_policy_select_target_memory(MapperContext ctx, Processor target_proc,
                                             const RegionRequirement& req,
                                             MemoryConstraint mc) override {
    diffuse_region_choice_t choice{};
    if (ask(req, &choice)) {
      Machine::MemoryQuery query(machine);
      query.has_affinity_to(target_proc);
      query.only_kind(legion_memory(choice.memory));
      if (query.count() > 0) return query.first();
      Memory fallback = DefaultMapper::default_policy_select_target_memory(ctx, target_proc, req, mc);
      notice(std::string("Mapple placed a region in ") + memory_name(choice.memory) +
             ", which the processor running it cannot reach here; using the DefaultMapper's "
             "memory instead");
      return fallback;
    }
    return DefaultMapper::default_policy_select_target_memory(ctx, target_proc, req, mc);
  }

  void default_policy_select_constraints(MapperContext ctx, LayoutConstraintSet& constraints,
                                         Memory target_memory,
                                         const RegionRequirement& req) override {
    DefaultMapper::default_policy_select_constraints(ctx, constraints, target_memory, req);
    diffuse_region_choice_t choice{};
    bool asked = ask(req, &choice);
    // diffuse's kernels address the last dimension contiguously: C order, field last.
    int dims = req.region.get_index_space().get_dim();
    std::vector<DimensionKind> order;
    if (asked && choice.fortran) {
      for (int d = 0; d < dims; d++) order.push_back(DimensionKind(LEGION_DIM_X + d));
    } else {
      for (int d = dims - 1; d >= 0; d--) order.push_back(DimensionKind(LEGION_DIM_X + d));
    }
    order.push_back(LEGION_DIM_F);
    constraints.ordering_constraint = OrderingConstraint(order, false);
    if (asked && choice.alignment > 0) {
      for (FieldID fid : req.privilege_fields) {
        constraints.add_constraint(AlignmentConstraint(fid, LEGION_GE_EK, choice.alignment));
      }
    }
  }

  int default_policy_select_garbage_collection_priority(MapperContext ctx, MappingKind kind,
                                                        Memory memory,
                                                        const PhysicalInstance& instance,
                                                        bool meets_fill_constraints,
                                                        bool reduction) override {
    if (collect_next_) return LEGION_GC_FIRST_PRIORITY;
    return DefaultMapper::default_policy_select_garbage_collection_priority(
        ctx, kind, memory, instance, meets_fill_constraints, reduction);
  }

 private:
  // diffuse's choice for `req` of the point task being mapped; false when there is none.
  bool ask(const RegionRequirement& req, diffuse_region_choice_t* out) {
    collect_next_ = false;
    if (mapping_ == nullptr || callbacks.region_choice == nullptr) return false;
    for (unsigned i = 0; i < mapping_->regions.size(); i++) {
      if (&mapping_->regions[i] != &req) continue;
      if (callbacks.region_choice(mapping_->args, mapping_->arglen, i, out) != 0) return false;
      collect_next_ = out->collect != 0;
      return true;
    }
    return false;
  }

  const Task* mapping_ = nullptr;
  bool collect_next_ = false;
};

// Maps launch points to tile colors through the projection in the requirement's arguments
// (the encoding is in the header).
class EncodedProjection : public ProjectionFunctor {
 public:
  explicit EncodedProjection(Runtime* rt) : ProjectionFunctor(rt) {}

  bool is_functional() const override { return true; }
  unsigned get_depth() const override { return 0; }

  LogicalRegion project(LogicalPartition upper, const DomainPoint& point,
                        const Domain& launch, const void* args, size_t size) override {
    return runtime->get_logical_subregion_by_color(upper, color(point, args, size));
  }

  LogicalRegion project(const Mappable* mappable, unsigned index, LogicalPartition upper,
                        const DomainPoint& point) override {
    const Task* task = mappable->as_task();
    size_t size = 0;
    const void* args = task != nullptr && index < task->regions.size()
                           ? task->regions[index].get_projection_args(&size)
                           : nullptr;
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

void install_mappers(Machine machine, Runtime* runtime, const std::set<Processor>& local_procs) {
  for (Processor p : local_procs) {
    runtime->replace_default_mapper(new DiffuseMapper(runtime->get_mapper_runtime(), machine, p),
                                    p);
  }
}

}  // namespace

extern "C" {

void diffuse_legion_register_mapper(const diffuse_mapper_callbacks_t* cb,
                                    legion_task_id_t point_task) {
  callbacks = *cb;
  point_task_id = point_task;
  Runtime::add_registration_callback(install_mappers);
}

void diffuse_legion_register_projection(legion_runtime_t runtime, legion_projection_id_t id) {
  Runtime* rt = CObjectWrapper::unwrap(runtime);
  rt->register_projection_functor(id, new EncodedProjection(rt), true);
}

legion_context_t diffuse_legion_begin_implicit_task(legion_runtime_t runtime,
                                                    legion_task_id_t task_id,
                                                    const char* name) {
  Runtime* rt = CObjectWrapper::unwrap(runtime);
  Context ctx = rt->begin_implicit_task(task_id, 0, Processor::LOC_PROC, name, false);
  return CObjectWrapper::wrap(new CContext(ctx));
}

void diffuse_legion_finish_implicit_task(legion_runtime_t runtime, legion_context_t ctx) {
  Runtime* rt = CObjectWrapper::unwrap(runtime);
  CContext* cctx = CObjectWrapper::unwrap(ctx);
  rt->finish_implicit_task(cctx->context());
  delete cctx;
}

void diffuse_legion_machine_shape(uint32_t* nodes, uint32_t* cpus_per_node,
                                  uint32_t* gpus_per_node, uint32_t* omps_per_node) {
  const ProcessorTable& t = table();
  *nodes = t.nodes;
  *cpus_per_node = t.count(Processor::LOC_PROC);
  *gpus_per_node = t.count(Processor::TOC_PROC);
  *omps_per_node = t.count(Processor::OMP_PROC);
}

int32_t diffuse_legion_processor_identity(legion_processor_t proc, diffuse_proc_choice_t* out) {
  return table().identify(CObjectWrapper::unwrap(proc), out) ? 0 : 1;
}

}  // extern "C"
