-- colo's job_submit plugin for Slurm (job_submit/lua): GPU shards are memory.
-- `colo slurm conf` writes this file with the site's settings in place of the line below;
-- copy it next to slurm.conf and set JobSubmitPlugins=lua. See docs/SLURM.md.
--   * a shard request without a size ("--gres=shard") gets one: from colo's estimate in the
--     job's comment ("colo:mem_mib=N", written by `colo sbatch`), else the site default;
--   * a request for more shards than one GPU has (Slurm takes all of a job's shards from one
--     GPU, so it would pend forever) becomes a whole GPU, or is rejected with a clear message.
local colo = @COLO_SETTINGS@

local function colo_mem_mib(comment)
  if comment == nil then return nil end
  local m = string.match(" " .. comment, " colo:mem_mib=(%d+)")
  -- at most 9 digits (colo writes at most its GPU-memory limit): longer would become a float
  if m and #m <= 9 then return tonumber(m) end
  return nil
end

local function shards_for(mib)
  -- less one part in 10^9, as colo's shard_plan.cpp: 51200 MiB x 1.1 is 55 shards, not 56
  return math.max(1, math.ceil(mib * (1 + colo.margin) / colo.shard_mib - 1e-9))
end

-- The shard count a tres_per_node string asks for: nil when it asks for none, 0 when it asks
-- for shards without a count ("gres:shard"); a second value is an error for a count that
-- cannot be one (0 shards, or more digits than any GPU has shards).
local function requested_shards(tres)
  if tres == nil then return nil end
  for item in string.gmatch(tres, "[^,]+") do
    local name, rest = string.match(item, "^gres[:/](%a+)(.*)$")
    if name == "shard" then
      local n = string.match(rest, ":(%d+)$")
      if n == nil then
        if rest == "" then return 0 end
        -- shard:1k (sbatch's count suffixes) and the like: never read as "no count given"
        return nil, "colo: --gres=shard" .. rest .. " is not a shard count: give a plain number (at most " ..
          colo.shards_per_gpu .. " per GPU), or --gres=shard to be sized by colo"
      end
      if #n > 9 then
        return nil, "colo: --gres=shard:" .. n .. " is not a shard count (at most " .. colo.shards_per_gpu .. " per GPU)"
      end
      if tonumber(n) == 0 then
        return nil, "colo: --gres=shard:0 asks for no GPU memory; ask for at least 1 shard, or --gres=shard to be sized by colo"
      end
      return tonumber(n)
    end
  end
  return nil
end

-- tres with its shard item replaced by `replacement`.
local function replace_shards(tres, replacement)
  local out = {}
  for item in string.gmatch(tres, "[^,]+") do
    if string.match(item, "^gres[:/]shard") then
      table.insert(out, replacement)
    else
      table.insert(out, item)
    end
  end
  return table.concat(out, ",")
end

-- Sizes and checks one request; returns the new tres_per_node (or nil to keep it) and an
-- error message (or nil).
local function colo_size(tres, comment)
  local n, bad = requested_shards(tres)
  if bad then return nil, bad end
  if n == nil then return nil, nil end
  local sized = false
  local why = ""
  if n == 0 then
    local mem = colo_mem_mib(comment)
    if mem then
      n = shards_for(mem)
      why = string.format("colo's estimate of %d MiB", mem)
    else
      n = colo.default_shards
      why = "the site default"
    end
    sized = true
  end
  if n > colo.shards_per_gpu then
    local msg = string.format("colo: %d shards (%d MiB) is more than one GPU has (%d shards, %d MiB)",
                              n, n * colo.shard_mib, colo.shards_per_gpu, colo.shards_per_gpu * colo.shard_mib)
    if colo.oversize == "reject" then
      return nil, msg .. "; ask for at most " .. colo.shards_per_gpu .. " shards, or a whole GPU with --gres=gpu:1"
    end
    slurm.log_user("%s; the job gets a whole GPU instead", msg)
    return replace_shards(tres, "gres:gpu:1"), nil
  end
  if sized then
    slurm.log_user("colo: %d shards (%d MiB of GPU memory) from %s", n, n * colo.shard_mib, why)
    return replace_shards(tres, "gres:shard:" .. n), nil
  end
  return nil, nil
end

-- Sizes job_desc's request in place; the Slurm return code.
local function colo_apply(job_desc, comment)
  local tres, err = colo_size(job_desc.tres_per_node, comment)
  if err then
    slurm.log_user("%s", err)
    return slurm.ERROR
  end
  if tres then job_desc.tres_per_node = tres end
  return slurm.SUCCESS
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  return colo_apply(job_desc, job_desc.comment)
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  if job_desc.tres_per_node == nil then return slurm.SUCCESS end
  return colo_apply(job_desc, job_desc.comment or job_rec.comment)
end

slurm.log_info("colo job_submit.lua loaded: shard %d MiB, %d shards per GPU", colo.shard_mib, colo.shards_per_gpu)
return slurm.SUCCESS
