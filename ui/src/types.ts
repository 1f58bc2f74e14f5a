// Shapes of the API's JSON documents (server/api.py).

// The documents typed in Python (src/perfsleuth/views/documents.py), generated.
export type {
  Advice,
  AnnotateDoc,
  CacheDoc,
  CacheFunction,
  CacheLevel,
  CacheModelDoc,
  Cliff,
  ConstantTime,
  Footprint,
  Geometry,
  Layout,
  LayoutField,
  LayoutLine,
  NoLayout,
  NoTlbCliff,
  Reorder,
  Sampling,
  ScaledRun,
  Scaling,
  Spread,
  StructLayout,
  TlbCliff,
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

// Hand-written still: the fleet's documents.

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
