-- Argo CD health of a Kubeflow TFJob (kubeflow.org/v1, training-operator v1.9).
-- The operator appends conditions (Created, Running, Restarting, Suspended, Succeeded,
-- Failed) and flips superseded ones to status "False". Terminal states win over whatever
-- came later; otherwise the newest true condition describes the job.
local hs = {status = "Progressing", message = "Waiting for the training operator to report status"}
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
local newest, failed, succeeded, suspended = nil, nil, nil, nil
for _, condition in ipairs(obj.status.conditions) do
  if condition.status == "True" then
    newest = condition
    if condition.type == "Failed" then
      failed = condition
    elseif condition.type == "Succeeded" then
      succeeded = condition
    elseif condition.type == "Suspended" then
      suspended = condition
    end
  end
end
local current = failed or succeeded or suspended or newest
if current == nil then
  return hs
end
if current == failed then
  hs.status = "Degraded"
elseif current == succeeded then
  hs.status = "Healthy"
elseif current == suspended then
  hs.status = "Suspended"
end
hs.message = current.type .. ": " .. (current.message or current.reason or "")
return hs
