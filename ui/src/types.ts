// Shapes of the API's JSON documents (server/api.py).

// The documents typed in Python (src/perfsleuth/views/documents.py), generated.
export type {
  Advice,
  AnnotateDoc,
  CallGraphDoc,
  Choices,
  DiffDoc,
  DiffRow,
  Dso,
  Experiment,
  Finding,
  Neighbour,
  PlacedFinding,
  RunDetail,
  RunSummary,
  SourceFile,
  SourceLine,
  ThreadFacts,
  ThreadRow,
  ThreadsDoc,
  TopDoc,
  TopRow,
} from "./generated/documents";
import type { DiffDoc, Finding, TopDoc } from "./generated/documents";

// Hand-written still: the CPU cache model's and the fleet's documents.

export interface FleetTopDoc extends TopDoc {
  from: number;
  to: number;
  where: string;
}

export interface FleetLabels {
  from: number;
  to: number;
  labels: Record<string, string[]>;
}

// `perfsleuth cache show --format json` (views/cache.py): each traced function's
// document, model/cache.py's CacheProjections, upgraded to the current version by the
// store before the server sends it.

export interface Spread {
  min: number;
  median: number;
  mean: number;
  max: number;
}

export interface Footprint {
  function: string;
  line_size: number;
  calls_recorded: number;
  calls_total: number;
  per_call: Record<"data_lines" | "code_lines" | "data_bytes" | "instructions" | "loads" | "stores" | "private_data_lines", Spread>;
  shared_data_lines: number;
  recorded_union: { data_lines: number; code_lines: number };
  whole_run: { data_lines: number; code_lines: number; instructions: number; loads: number; stores: number };
  by_source: { source: string; accesses_per_call: number; data_lines_per_call: number }[];
}

export interface LayoutField {
  name: string;
  type: string;
  /** A bitfield's are its storage unit's, as pahole prints them; `bytes` is what its bits occupy. */
  offset: number;
  size: number;
  bit_offset: number | null;
  bit_size: number | null;
  bytes: number;
  ancestor: boolean;
  fixed: boolean;
  line: number;
  touched: number;
  hot: boolean;
}

export interface LayoutLine {
  line: number;
  hot_fields: string[];
  cold_fields: string[];
  hot_bytes: number;
  touched: number;
}

export interface Reorder {
  move: string[];
  from_line: number;
  to_line: number;
  swap_out: string[];
  lines_per_object_before: number;
  lines_per_object_after: number;
}

export interface StructLayout {
  available: true;
  struct: string;
  size: number;
  line_size: number;
  object_misalignment: number;
  calls: number;
  visits: number;
  fields: LayoutField[];
  lines: LayoutLine[];
  lines_touched_per_call: number;
  reorder: Reorder | null;
  pahole: string;
  parameter: string | null;
  variable: string;
  variable_kind: "parameter" | "local" | "member" | "global" | "static";
  /** Global and static variables only. */
  address?: number;
  elements?: number;
  elements_touched?: number;
}

export interface NoLayout {
  available: false;
  reason: string;
}

export type Layout = StructLayout | NoLayout;

export interface CacheLevel {
  name: string;
  size: number;
  ways: number;
}

export interface Geometry {
  line_size: number;
  prefetch: boolean;
  levels: CacheLevel[];
}

export interface CacheModelDoc {
  geometry: Geometry;
  describe: string;
  accesses: number;
  misses: Record<string, number>;
  misses_per_call: Record<string, number>;
  per_call: number[][];
  by_source: Record<string, Record<string, number>>;
}

export interface Cliff {
  level: string;
  capacity_lines: number;
  /** "measured": the LLC's effective capacity on this machine (perfsleuth cache calibrate). */
  capacity_source: "sysfs" | "measured";
  nominal_capacity_lines?: number;
  nominal_n?: number | null;
  effective?: { available: boolean; reason?: string; evidence?: string; measured_at?: string };
  /** The part of the capacity the working set's lines can fill, given the sets their
   * places in the page map to (1: spread over all sets); `n` is where it is reached. */
  usable_share: number;
  usable_lines: number;
  /** The fit this level's cliff comes from: "data_lines" for the L1d, which the prefetcher does not fill. */
  working_set: string;
  n: number | null;
  in_range: boolean;
}

/** The pages the function touches against this machine's measured TLB reach. */
export interface TlbCliff {
  available: true;
  reach_pages: number;
  page_size: number;
  measured_at: string;
  evidence: string;
  intercept_pages: number;
  pages_per_n: number;
  n: number | null;
  in_range: boolean;
}

export interface NoTlbCliff {
  available: false;
  reason: string;
}

export interface ScaledRun {
  n: number;
  data_lines: number;
  /** null: recorded before it was counted. */
  data_pages: number | null;
  cached_lines: number;
  line_offsets: number[] | null;
  touched_offsets: number[] | null;
  calls: number;
  misses: Record<string, number>;
  misses_per_call: Record<string, number>;
}

export interface Scaling {
  runs: ScaledRun[];
  fit: { of: string; touched_lines_per_n: number; touched_intercept_lines: number; intercept_lines: number; lines_per_n: number; bytes_per_n: number };
  range: [number, number];
  cliffs: Cliff[];
  tlb: TlbCliff | NoTlbCliff;
  geometry: Geometry;
}

export interface ConstantTime {
  function: string;
  constant_time: boolean;
  variants: number;
  differences: { variant: number; differs: boolean; what: string; first_source: string; call?: number; pc?: number }[];
  instructions_per_variant: number[];
}

export interface CacheFunction {
  function: string;
  executable: string;
  footprint: Footprint;
  /** The first of `layouts`, or why there is none. */
  layout: Layout;
  /** Every struct laid out: the pointer parameter's, then globals by accesses. */
  layouts: StructLayout[];
  model: CacheModelDoc;
  sampling: Sampling;
  scaling?: Scaling;
  constant_time?: ConstantTime;
}

/** Which calls were traced (model/cache.py Sampling). */
export interface Sampling {
  chosen: "first" | "fixed" | "auto";
  every: number;
  calls_seen: number;
  calls_traced: number;
  budget_s: number | null;
  out_of_time: boolean;
}

export interface CacheDoc {
  run: string;
  functions: CacheFunction[];
}

// The fleet's series, diff and advice (fleet/trends.py, fleet/advice.py), as /api/fleet/ answers them.
export interface FleetPoint {
  from: number;
  to: number;
  cpu_ns: number;
  samples: number;
  self: number;
  total: number;
}

export interface FleetSeriesDoc {
  function: string;
  from: number;
  to: number;
  where: string;
  step: number;
  points: FleetPoint[];
}

export interface FleetSide {
  from: number;
  to: number;
  where: string;
}

export interface FleetDiffDoc extends Omit<DiffDoc, "a" | "b"> {
  a: FleetSide;
  b: FleetSide;
}

export interface FleetPlace {
  share: number;
  cores: number;
  service?: string;
  host?: string;
}

export interface FleetFinding extends Finding {
  cores_saved: number;
  money_per_month?: number;
  services: FleetPlace[];
  hosts: FleetPlace[];
  hosts_count: number;
  same_hot_spot?: string;
}

export interface FleetAdviceDoc {
  from: number;
  to: number;
  where: string;
  cores: number;
  findings: FleetFinding[];
  hidden: number;
  notes: string[];
}
