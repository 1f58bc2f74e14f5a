// Shapes of the API's JSON documents (server/api.py).

export interface Finding {
  rule?: string;
  kind: string;
  title: string;
  function?: string;
  dso?: string;
  file?: string;
  line?: number;
  share?: number;
  estimated_gain?: number;
  confidence?: number;
  evidence?: string[];
  suggestion?: string;
  fix?: Record<string, unknown>;
  verified?: { ratio?: number; ci95?: [number, number]; runs?: number } & Record<string, unknown>;
  details?: Record<string, unknown>;
}

/** A finding where rank.py put it: the gain the order used, measured when an A/B experiment verified it. */
export interface PlacedFinding extends Finding {
  gain: number;
  gain_measured: boolean;
  hidden_because?: string;
}

/** rank.Advice: a run's findings in the order to fix them, and those left out with why. */
export interface Advice {
  kind: "advice";
  version: number;
  run: string;
  advised: boolean;
  findings: PlacedFinding[];
  hidden: number;
  hidden_findings: PlacedFinding[];
  notes: string[];
  src_roots: string[];
}

export interface RunSummary {
  id: string;
  command: string;
  mode: string;
  started: string;
  duration_s: number | null;
  exit_status: number | null;
  unit: string;
  total: number;
  samples: number;
  top_finding?: PlacedFinding | null;
}

export interface RunDetail extends RunSummary {
  cwd: string;
  host: string;
  cpu_model: string;
  kernel: string;
  git_rev: string;
  source: string;
  dsos: { path: string; build_id: string }[];
  threads: { tid: number; pid: number; name: string }[];
  states: string[];
  findings: number;
  experiments: number;
  cache_functions: number;
}

export interface ThreadRow {
  tid: number;
  pid: number;
  name: string;
  total: number;
  share: number;
  states: Record<string, number>; // fraction of the thread's own time per state
}

export interface ThreadsDoc {
  run: string;
  unit: string;
  total: number;
  threads: ThreadRow[];
}

export interface TopRow {
  function: string;
  dso: string;
  file: string;
  line: number;
  self: number;
  total: number;
}

export interface TopDoc {
  run: string;
  unit: string;
  total: number;
  samples: number;
  by: string;
  rows: TopRow[];
}

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

export interface Neighbour {
  function: string;
  total: number;
  share: number;
}

export interface CallGraphDoc {
  function: string;
  self: number;
  total: number;
  callers: Neighbour[];
  callees: Neighbour[];
}

export interface SourceLine {
  line: number;
  self: number;
  total: number;
  source: string;
}

export interface SourceFile {
  file: string;
  found: boolean;
  /** The file served, and the source root it was found under (null: not found). */
  path?: string | null;
  root?: string | null;
  self: number;
  lines: SourceLine[];
}

export interface AnnotateDoc {
  function: string;
  files: SourceFile[];
}

export interface DiffRow {
  function: string;
  dso: string;
  file: string;
  line: number;
  self_a: number;
  self_b: number;
  delta_self: number;
  total_a: number;
  total_b: number;
  delta_total: number;
}

export interface DiffDoc {
  a: string;
  b: string;
  unit: string;
  total_a: number;
  total_b: number;
  by: string;
  rows: DiffRow[];
}

export interface Experiment {
  name: string;
  data: unknown;
  verdicts: string[]; // what `perfsleuth compare` / `try` print (experiments/verdict.py)
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
