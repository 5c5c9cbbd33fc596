-- Argo CD health of a JobSet (jobset.x-k8s.io/v1alpha2, JobSet v0.12).
-- The JobSet controller keeps one condition per type (Completed, Failed, Suspended,
-- RestartingJobSet, StartupPolicyInProgress, StartupPolicyCompleted), turning a superseded one
-- "False", and sets status.terminalState (Completed or Failed) when the JobSet finishes.
-- Finished states win over everything else. A suspended JobSet that names a Kueue LocalQueue
-- waits for admission, which Kueue grants by itself: Progressing, not an error and not a
-- pause. A suspended JobSet without a queue waits for a person to resume it: Suspended, as
-- Argo CD reports a suspended batch Job. (argo/README.md says why.)
-- Argo CD opens only Lua's base, table and package libraries: no string.* in here.
local QUEUE_LABEL = "kueue.x-k8s.io/queue-name"

local function text(value)
  if value == nil or value == "" then
    return nil
  end
  return value
end

-- "<type>: <message>", the form the TFJob health check uses too.
local function said(condition, fallback)
  return condition.type .. ": " .. (text(condition.message) or text(condition.reason) or fallback)
end

-- "Running: 3/4 jobs ready", from the spec's replicas and the controller's per-job counts
-- (a Job that succeeded stays counted: the JobSet waits for the others).
local function running(spec, status)
  local wanted, ready = 0, 0
  for _, job in ipairs(spec.replicatedJobs or {}) do
    wanted = wanted + (job.replicas or 1)
  end
  for _, job in ipairs(status.replicatedJobsStatus or {}) do
    ready = ready + (job.ready or 0) + (job.succeeded or 0)
  end
  local message = "Running: " .. ready .. "/" .. wanted .. " jobs ready"
  if (status.restarts or 0) > 0 then
    message = message .. ", restarts: " .. status.restarts
  end
  return message
end

local hs = {status = "Progressing", message = "Waiting for the JobSet controller to report status"}
local spec = obj.spec or {}
local status = obj.status or {}
local labels = (obj.metadata or {}).labels or {}
local now = {}
for _, condition in ipairs(status.conditions or {}) do
  if condition.status == "True" then
    now[condition.type] = condition
  end
end

if now.Failed ~= nil or status.terminalState == "Failed" then
  hs.status = "Degraded"
  hs.message = now.Failed and said(now.Failed, "the JobSet failed") or "Failed"
elseif now.Completed ~= nil or status.terminalState == "Completed" then
  hs.status = "Healthy"
  hs.message = now.Completed and said(now.Completed, "all jobs completed") or "Completed"
elseif spec.suspend == true then
  local queue = text(labels[QUEUE_LABEL])
  if queue ~= nil then
    hs.message = "Queued: suspended until Kueue admits it to LocalQueue " .. queue
  else
    hs.status = "Suspended"
    hs.message = now.Suspended and said(now.Suspended, "suspended") or "Suspended: spec.suspend is true"
  end
elseif now.RestartingJobSet ~= nil then
  hs.message = said(now.RestartingJobSet, "restarting")
elseif now.StartupPolicyInProgress ~= nil then
  hs.message = said(now.StartupPolicyInProgress, "starting the replicated jobs in order")
elseif status.replicatedJobsStatus ~= nil then
  hs.message = running(spec, status)
end
return hs
