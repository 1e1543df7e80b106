-- Argo CD health of a kupenstack.io object, from the kstatus conditions KupenStack writes
-- (docs/reference/events-and-conditions.md): one script for every kind, read from argocd-cm
-- keys resource.customizations.health.kupenstack.io_<Kind>. Lua 5.1 (Argo CD's gopher-lua).
local hs = { status = "Progressing", message = "waiting for the KupenStack controller" }

local function condition(kind)
  if obj.status == nil or obj.status.conditions == nil then return nil end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == kind then return c end
  end
  return nil
end

local function said(c, fallback)
  if c ~= nil and c.message ~= nil and c.message ~= "" then return c.message end
  if c ~= nil and c.reason ~= nil then return c.reason end
  return fallback
end

-- Deleting: the controller still removes the OpenStack object behind its finalizer.
if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  hs.message = "being deleted: the OpenStack object goes first"
  return hs
end

local reconciling = condition("Reconciling")
-- A suspended Sync, or an object of a paused namespace: nothing is applied until resumed.
if (obj.spec ~= nil and obj.spec.suspend == true) or (reconciling ~= nil and reconciling.status == "False" and (reconciling.reason == "Suspended" or reconciling.reason == "Paused")) then
  hs.status = "Suspended"
  hs.message = said(reconciling, "suspended")
  return hs
end

if obj.status == nil or obj.status.conditions == nil then return hs end

-- A status for an older spec says nothing about the one just applied.
local generation = obj.metadata ~= nil and obj.metadata.generation or nil
local observed = obj.status.observedGeneration
if generation ~= nil and observed ~= nil and observed < generation then
  hs.message = "generation " .. tostring(generation) .. " not acted on yet"
  return hs
end

local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = said(stalled, "Stalled")
  return hs
end

local ready = condition("Ready")
if ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  hs.message = said(ready, "Ready")
  return hs
end
if reconciling ~= nil and reconciling.status == "True" then
  hs.message = said(ready, said(reconciling, "reconciling"))
  return hs
end
-- Ready False with no work under way: an error retried with backoff. A Sync waiting for its
-- dependsOn is not failing.
if ready ~= nil and ready.status == "False" and ready.reason ~= "DependencyNotReady" and ready.reason ~= "Progressing" then
  hs.status = "Degraded"
  hs.message = said(ready, "not Ready")
  return hs
end
hs.message = said(ready, hs.message)
return hs
