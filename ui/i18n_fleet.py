"""Labels of the portfolio's rent-vs-buy (fleet) view (ui/fleet_view.py), in English and Chinese.

Same shape as ``ui.i18n``'s table (key -> (English, 中文)), merged into it; kept apart because
ui/i18n.py is over the module size (CONTRIBUTING.md). A dollar sign stands before a figure only
(Streamlit reads "$...$" around other text as math).
"""

from __future__ import annotations

FLEET_LABELS: dict[str, tuple[str, str]] = {
    # the portfolio's two answers (sidebar.TRANSLATED_CHOICES keeps the choice across a language switch)
    "portfolio_answer": ("Plan the jobs", "规划方式"),
    "opt_on_inventory": ("on the inventory", "基于现有库存"),
    "opt_fleet": ("rent or buy (fleet)", "租用还是购买（机队）"),
    "portfolio_fleet": ("Portfolio: several jobs, rent or buy their GPUs", "组合：多个任务，租用还是购买 GPU"),
    "portfolio_fleet_help": (
        "Add the job configured in the sidebar to the list, repeat with other settings, and the planner weighs "
        "buying GPUs for all jobs against renting them.",
        "将侧栏中配置的任务加入列表，改变设置后重复添加，规划器会为所有任务权衡购买 GPU 与租用的成本。",
    ),
    "fleet_title": ("Rent or buy", "租用还是购买"),
    "fleet_help": (
        "How many GPUs of each type to buy for these jobs over the horizon, against renting them (trainplan"
        " fleet). Each job may run on every allowed GPU type. Rent: the GPU table's $/h, or the pricing kind"
        " chosen; purchase: the table's purchase column (editable under Buy, whose ownership assumptions set"
        " the owned cost).",
        "在规划期内为这些任务购买每种 GPU 多少块，并与租用比较（trainplan fleet）。每个任务可使用任一允许的 GPU"
        " 型号。租价：GPU 表中的每小时价格或所选的计价方式；购买价：GPU 表的购买价一栏（在“购买”计价下可编辑，"
        "其持有成本假设决定自有 GPU 的成本）。",
    ),
    "fleet_horizon_days": ("Horizon (days)", "规划期（天）"),
    "fleet_num_slots": ("Start-time slots", "开始时间槽数"),
    "fleet_buy": ("GPU types to buy", "可购买的 GPU 型号"),
    "fleet_buy_help": (
        "The types the fleet may buy, each at the GPU table's purchase price; the others are rented.",
        "机队可以购买的型号，按 GPU 表中的购买价计；其余型号租用。",
    ),
    "fleet_buy_option": ("{gpu} ({price} each)", "{gpu}（每块 {price}）"),
    "fleet_pick_buy": (
        "Pick the GPU types to buy: the fleet weighs buying them against renting.",
        "请选择可购买的 GPU 型号：机队会将购买与租用进行比较。",
    ),
    "fleet_no_purchase": (
        "No allowed GPU type has a purchase price: give one in the GPU table's purchase column (under Buy).",
        "没有任何允许的 GPU 型号带有购买价：请在 GPU 表的购买价一栏中填写（“购买”计价下）。",
    ),
    "fleet_counts_ignored": (
        "The fleet sizes what to buy and ignores the GPU table's max ({gpus}).",
        "机队自行确定购买数量，忽略 GPU 表中的上限（{gpus}）。",
    ),
    "fleet_budget_ignored": (
        "The fleet sizes what to buy and ignores the jobs' budgets ({jobs}); in a portfolio, a budget bounds the cost it shows for the job.",
        "机队自行确定购买数量，忽略任务的预算（{jobs}）；在组合规划中，预算限制表中所示的任务费用。",
    ),
    "fleet_tco_default": (
        "Owned GPUs at the default ownership assumptions: choose Buy under pricing to edit them.",
        "自有 GPU 按默认持有成本假设计算：在计价方式中选择“购买”即可编辑。",
    ),
    # the three options (a reserved price kind's "reserve only" in place of "rent only")
    "fleet_option_mixed": ("mixed", "混合"),
    "fleet_option_rent_only": ("rent only", "只租用"),
    "fleet_option_reserve_only": ("reserve only", "只预留"),
    "fleet_option_buy_only": ("buy only", "只购买"),
    # with GPUs already owned every option holds them too (FleetSolution.option_name; trial s51 H1)
    "fleet_option_owned_rent_only": ("owned + rent", "自有 + 租用"),
    "fleet_option_owned_reserve_only": ("owned + reserve", "自有 + 预留"),
    "fleet_option_owned_buy_only": ("owned + buy", "自有 + 购买"),
    "fleet_owned": (
        "The GPU table's counts are GPUs we own ({gpus})",
        "GPU 表中的数量是我们已拥有的 GPU（{gpus}）",
    ),
    "fleet_owned_help": (
        "As a jobs file's [inventory] under trainplan fleet: their price is sunk (no outlay), their hosting,"
        " staff and power are counted over the horizon, every job may run on them, and the fleet sizes what to"
        " buy in addition. Unticked: the counts are ignored.",
        "相当于 trainplan fleet 任务文件中的 [inventory]：其购置价已沉没（无支出），托管、人员与电费按规划期计入，"
        "所有任务都可使用，机队只确定还需额外购买多少。不勾选：忽略这些数量。",
    ),
    "fleet_counts_owned": (
        "The fleet holds the GPUs we own ({gpus}) in every option and sizes what to buy in addition.",
        "机队在每个方案中都保留我们已拥有的 GPU（{gpus}），只确定还需额外购买多少。",
    ),
    # planner/search/late_band.py LateAtBandEnd (trial s51 M5), the CLI's words
    "late_at_band_end": (
        "{job}: at the slow end of its 80 % band it ends on day {end:,.1f} (starting on day {start:,.1f} as"
        " scheduled), past its deadline day {deadline:,g}.",
        "{job}：按其 80% 区间的慢端，它在第 {end:,.1f} 天结束（按计划于第 {start:,.1f} 天开始），晚于截止日第"
        " {deadline:,g} 天。",
    ),
    # planner/search/late_band.py LateOnRentRows (after52 M3, chain52), the CLI's words
    "fleet_rent_only_late": (
        "No rent-only option: with every job rented, {job} (after {after}) ends on day {end:,.1f}, past its"
        " {limit_key} of day {limit:,g}; no type it may rent runs it fast enough after them.",
        "没有“只租用”方案：所有任务都租用时，{job}（在 {after} 之后）于第 {end:,.1f} 天结束，晚于其 {limit_key} 第"
        " {limit:,g} 天；它可租用的 GPU 类型都无法在这些任务之后足够快地完成它。",
    ),
    "fleet_total": ("{option}: total at {risk}", "{option}：{risk} 分位总成本"),
    "fleet_chart": (
        "Each option's total at {risk}, with its 80 % band (every job at its band's ends)",
        "各方案 {risk} 分位总成本及其 80% 区间（各任务取其区间两端）",
    ),
    "axis_fleet_total": ("total over the horizon (USD)", "规划期内总成本（美元）"),
    # the mixed (chosen) option's cost terms and what it holds
    "fleet_split_rent": (
        "{option}: ownership {ownership} + busy power {power} + rent {rent} = {total}.",
        "{option}：持有成本 {ownership} + 运行电费 {power} + 租金 {rent} = {total}。",
    ),
    "fleet_split_reserved": (
        "{option}: ownership {ownership} + busy power {power} + reserved terms {reserved} = {total}.",
        "{option}：持有成本 {ownership} + 运行电费 {power} + 预留期限费用 {reserved} = {total}。",
    ),
    "fleet_bought": (
        "Bought: {gpus}, for {outlay} up front; the {owned:,} owned GPUs are busy {busy:.0%} of the {days:,.0f} days.",
        "购买：{gpus}，一次性支出 {outlay}；{owned:,} 块自有 GPU 在 {days:,.0f} 天中有 {busy:.0%} 的时间在运行。",
    ),
    # the chosen option's purchase, its outlay first (ui/purchase_texts.py; the CLI says the English)
    "fleet_purchase": (
        "Buy {gpus}: {outlay} up front, saves {saving} over {days:,.0f} days vs {against}.",
        "购买 {gpus}：一次性支出 {outlay}，{days:,.0f} 天内比{against}节省 {saving}。",
    ),
    "fleet_against_rent": ("renting", "租用"),
    "fleet_against_reserve": ("reserving", "预留"),
    "fleet_small_saving": (
        "A small saving for the outlay: {outlay} up front saves {saving} over {days:,.0f} days, {share:.1%} of it."
        " The total charges the GPUs' straight-line depreciation and takes them to keep their book value after"
        " the horizon: worth {share:.1%} of their price less than that (resale, a newer generation), {against} is"
        " cheaper.",
        "相对支出而言节省很少：一次性支出 {outlay}，{days:,.0f} 天内只节省 {saving}，为支出的 {share:.1%}。"
        "总成本按直线折旧计入 GPU 的成本，并假定规划期结束后 GPU 仍值其账面价值：若其价值比账面价值低出购买价的 {share:.1%}"
        "（转售价格、新一代 GPU 上市），{against}就更便宜。",
    ),
    "fleet_bought_none": ("{option} buys no GPU.", "{option}不购买任何 GPU。"),
    "fleet_reserved_held": (
        "Reserved: {gpus} for {terms} whole term(s) of {kind}, busy {busy:.0%} of the {days:,.0f} days they bill.",
        "预留：{gpus}，{kind} 的 {terms} 个完整期限，在计费的 {days:,.0f} 天中有 {busy:.0%} 的时间在运行。",
    ),
    "fleet_ownership": (
        "A total counts each bought GPU's purchase straight-line over {years:g} years to a {residual:.0%} resale"
        " value for the {days:,.0f} days{capital}, plus hosting, staff and power: not the outlay, which a shorter"
        " life or no resale would charge more of.",
        "总成本按 {years:g} 年直线折旧至 {residual:.0%} 残值计入每块所购 GPU 在这 {days:,.0f} 天内的份额{capital}，"
        "另加托管、人员和电费：并非一次性支出；使用年限更短或没有残值时，计入的份额会更多。",
    ),
    "fleet_capital": (
        ", and {rate:.0%} a year on its average book value (cost of capital)",
        "，并按平均账面价值每年计 {rate:.0%} 的资金成本",
    ),
    "fleet_no_capital": (", no cost of capital", "，不计资金成本"),
    "fleet_lifetimes": (
        " The horizon is {lives:.1f} lifetimes, so the total counts replacing them as they age out, which the outlay (one purchase) does not show.",
        "规划期为 {lives:.1f} 个使用年限，总成本因此包含到期更换，而一次性支出（一次购买）并不体现。",
    ),
    "fleet_slots": (
        "Approximate: the solver starts jobs on held GPUs at one of {slots} slots of {days:,.1f} days, or at a"
        " release day or a predecessor's end; the schedule shown then starts each as early as its GPUs, release and"
        " predecessors allow. More slots may find a cheaper fleet, at more solve time.",
        "近似结果：求解器让使用自有或预留 GPU 的任务在 {slots} 个时间槽（每个 {days:,.1f} 天）之一开始，"
        "或在其最早开始日、前序任务结束时开始；所示排期再让每个任务在其 GPU 空闲、已到最早开始日且前序任务结束后尽早开始。"
        "更多时间槽可能找到更便宜的机队，但求解更慢。",
    ),
    "fleet_rates": ("{what} per GPU-hour: {rates}.", "每 GPU 小时{what}：{rates}。"),
    "fleet_rate_rent": ("Rent", "租价"),
    "fleet_rate_reserved": ("{kind} rate", "{kind} 价格"),
    "fleet_rate": ("{gpu} ${rate:,.2f} ({basis})", "{gpu} ${rate:,.2f}（{basis}）"),
    "fleet_held_only": (
        "{gpus}: no offer of the price kind and no rate given, so bought or not held, never rented or reserved.",
        "{gpus}：没有该计价方式的报价，也未给出价格，因此只能购买或不用，不会租用或预留。",
    ),
    # the mixed option, job by job
    "fleet_timeline": (
        "Jobs on owned GPUs (mixed), days at {risk}",
        "使用自有 GPU 的任务（混合方案），{risk} 分位天数",
    ),
    "fleet_none_owned": (
        "The mixed answer runs no job on owned GPUs.",
        "混合方案没有任务使用自有 GPU。",
    ),
    "fleet_jobs": ("Schedule of each job (mixed)", "各任务排程（混合方案）"),
    "fleet_job_costs": ("Cost of each job (mixed)", "各任务费用（混合方案）"),
    "col_held": ("held", "持有方式"),
    "held_owned": ("owned", "自有"),
    "held_rented": ("rented", "租用"),
    "held_reserved": ("reserved", "预留"),
    "col_fleet_cost": ("cost at {risk} (USD)", "{risk} 分位费用（美元）"),
    "col_fleet_cost_help": (
        "Busy power on owned GPUs, rent on rented ones, nothing on reserved ones (their terms pay it).",
        "自有 GPU 计运行电费，租用 GPU 计租金，预留 GPU 不另计（由预留期限支付）。",
    ),
    "fleet_hover_days": ("day {start:,.1f}–{end:,.1f} at {risk}", "第 {start:,.1f}–{end:,.1f} 天（{risk} 分位）"),
    # where buying pays off, per type to buy
    "fleet_break_even_title": ("Where buying pays off", "何时购买更划算"),
    "fleet_break_even": (
        "{gpu}: buying pays off above {share:.0%} utilisation (rent ${rent:,.2f} per GPU-hour).",
        "{gpu}：利用率高于 {share:.0%} 时购买更划算（租价每 GPU 小时 ${rent:,.2f}）。",
    ),
    "fleet_never_pays": (
        "{gpu}: buying never pays off at ${rent:,.2f} rent per GPU-hour, even 100 % busy.",
        "{gpu}：租价为每 GPU 小时 ${rent:,.2f} 时，即使 100% 运行，购买也不划算。",
    ),
    # the rent below which renting beats buying (FleetSolution.break_even_rents) and the rent's
    # listed offers (OffersRange): trial s51 M4, the answer rested on one median rent
    "fleet_break_even_rent": (
        "Renting beats buying below ${rent:,.2f} per GPU-hour, at the {option} option's {busy:.0%} busy.",
        "租价低于每 GPU 小时 ${rent:,.2f} 时租用比购买划算（按{option}方案 {busy:.0%} 的运行时间）。",
    ),
    "fleet_no_option_buys": ("No option buys it.", "没有方案购买该型号。"),
    "fleet_offers": (
        # "\\$": the second "$" follows "–", which Streamlit reads as the close of a LaTeX span
        "The catalog's {count:,} {kind} offers run \\${low:,.2f}–\\${high:,.2f}.",
        "目录中 {count:,} 个{kind}报价为 \\${low:,.2f}–\\${high:,.2f}。",
    ),
    "fleet_offer_one": ("The catalog's one {kind} offer: ${low:,.2f}.", "目录中唯一的{kind}报价：${low:,.2f}。"),
    "fleet_vs_reserved_below": (
        "{gpu}: buying is cheaper below {share:.0%} busy (its power is extra), reserving above.",
        "{gpu}：运行时间低于 {share:.0%} 时购买更便宜（电费另计），高于则预留更便宜。",
    ),
    "fleet_vs_reserved_buy": ("{gpu}: buying is cheaper at any utilisation.", "{gpu}：任何利用率下购买都更便宜。"),
    "fleet_vs_reserved_reserve": (
        "{gpu}: reserving is cheaper at any utilisation.",
        "{gpu}：任何利用率下预留都更便宜。",
    ),
}
